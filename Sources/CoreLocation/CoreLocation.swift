// Apple's CoreLocation framework by its module name, so that `import CoreLocation` compiles unchanged: CLLocationManager, its delegate, CLLocation and CLAuthorizationStatus are
// AppHostKit's (docs/continuous-modes.md, "Continuous background modes"). As on iOS, importing it imports Foundation too.
@_exported public import AppHostKit
@_exported public import Foundation
