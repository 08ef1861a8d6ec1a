// Apple's CallKit framework by its module name, so that `import CallKit` compiles unchanged: CXProvider, its configuration and delegate, CXCallUpdate and CXHandle are
// AppHostKit's (docs/continuous-modes.md, "Continuous background modes"). As on iOS, importing it imports Foundation too.
@_exported public import AppHostKit
@_exported public import Foundation
