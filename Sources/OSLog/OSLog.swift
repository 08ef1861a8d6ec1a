// Apple's OSLog framework by its module name: `import OSLog` brings os's `Logger`, `OSLog` and
// `os_log`, as it does on iOS (docs/porting.md, "Porting iOS code").
@_exported public import os
