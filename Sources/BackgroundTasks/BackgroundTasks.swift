// Apple's BackgroundTasks framework by its module name, so that `import BackgroundTasks` compiles
// unchanged: BGTaskScheduler, BGAppRefreshTaskRequest, BGProcessingTaskRequest, BGAppRefreshTask,
// BGProcessingTask and BGTaskScheduler.Error are AppHostKit's (docs/background-modes.md, "Background modes").
// As on iOS, importing it imports Foundation too.
@_exported public import AppHostKit
@_exported public import Foundation
