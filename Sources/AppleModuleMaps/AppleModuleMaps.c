// The target exists for its module map (include/module.modulemap); its C functions are defined
// in Swift by the UIKit module.
#include "UIKitMain.h"
