/* The `serve` command: the exporter daemon lives in src/serve. */
#include "cli/commands.h"
#include "serve/serve.h"

int cmd_serve(int argc, char **argv)
{
	return ks_serve_main(argc, argv);
}
