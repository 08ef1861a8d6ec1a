// A well-formed shared object that is not an apphost plugin: it exports no record and no entry.
#include "not_a_plugin.h"
int not_a_plugin_answer(void) { return 42; }
