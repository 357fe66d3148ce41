/* `ksight diff A B`: two recordings side by side. */
#include "cli/commands.h"
int cmd_diff(int argc, char **argv) { (void)argc; (void)argv; return 2; }
