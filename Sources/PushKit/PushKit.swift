// Apple's PushKit framework by its module name, so that `import PushKit` compiles unchanged: PKPushRegistry, its delegate, PKPushPayload and PKPushType are
// AppHostKit's (docs/continuous-modes.md, "Continuous background modes"). As on iOS, importing it imports Foundation too.
@_exported public import AppHostKit
@_exported public import Foundation
