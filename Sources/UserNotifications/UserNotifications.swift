// Apple's UserNotifications framework by its module name, so that `import UserNotifications` compiles unchanged: UNUserNotificationCenter, its delegate and the UN* requests, contents and triggers are
// AppHostKit's (docs/porting.md, "Porting iOS code"). As on iOS, importing it imports Foundation too.
@_exported public import AppHostKit
@_exported public import Foundation
