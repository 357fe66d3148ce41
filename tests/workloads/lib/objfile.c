/* A relocatable object with debug info for map_obj to map, as ld maps its inputs: its DWARF has relocations. */
int objfile_counter;

int objfile_get(void)
{
	return objfile_counter;
}
