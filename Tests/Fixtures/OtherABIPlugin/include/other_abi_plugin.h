#include "apphost_plugin.h"
