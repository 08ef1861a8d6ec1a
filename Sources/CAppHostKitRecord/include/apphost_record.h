#ifndef APPHOST_RECORD_H
#define APPHOST_RECORD_H
#include "apphost_plugin.h"
/// The record every plugin exports; defined in record.c, compiled into the plugin with the SDK.
extern const struct apphost_plugin_record apphost_plugin_record;
#endif
