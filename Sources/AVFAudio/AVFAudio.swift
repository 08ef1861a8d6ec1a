// Apple's AVFAudio framework by its module name, so that `import AVFAudio` compiles unchanged: AVAudioSession, AVAudioPlayer and AVAudioPlayerDelegate are
// AppHostKit's (docs/continuous-modes.md, "Continuous background modes"). As on iOS, importing it imports Foundation too.
@_exported public import AppHostKit
@_exported public import Foundation
