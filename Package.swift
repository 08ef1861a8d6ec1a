// swift-tools-version: 6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

/// The SDK's targets, linked into every plugin, instantiate concrete generic types (a
/// `[AnyHashable: Any]`, say) through their metadata accessors instead of by mangled name: each
/// mangled name's conformances are looked up at its first use in each app process, a scan of
/// every loaded image's conformance records (the runtime empties its cache when a plugin
/// loads). With it a launch took 0.767x bwrap's time, against 0.840x without (docs/performance.md, "A
/// launch's path"). SwiftPM refuses an unsafe flag in a dependency resolved by version, which is checked
/// out at a tag: a checkout at a tag, or one that is not a git repository (a registry's), goes
/// without it, and its plugins launch that much slower.
let sdkSettings: [SwiftSetting] = Context.gitInformation.map { $0.currentTag == nil } ?? false
    ? [.unsafeFlags(["-Xfrontend", "-disable-concrete-type-metadata-mangled-name-accessors"])] : []

/// An app plugin: a dynamic library that links the SDK statically, plus its Info.plist beside
/// the sources (bundled by `swift package bundle-app`). Target names must be unique across a
/// package graph, so these carry a suffix that leaves Hello, Notes… free for app authors.
func appPlugin(
    _ name: String, path: String, dependencies: [Target.Dependency] = [], exclude: [String] = [],
    swiftSettings: [SwiftSetting] = strictSettings
) -> (Product, Target) {
    (
        .library(name: name, type: .dynamic, targets: [name]),
        .target(
            name: name,
            dependencies: ["AppHostKit"] + dependencies,
            path: path,
            exclude: ["Info.plist"] + exclude,
            swiftSettings: swiftSettings
        )
    )
}

/// Every module named after one of Apple's (docs/porting.md, "Porting iOS code").
let appleModules: [Target.Dependency] = [
    "UIKit", "BackgroundTasks", "os", "OSLog", "AVFoundation", "AVFAudio", "CoreLocation", "PushKit", "CallKit", "UserNotifications",
]

let apps = [
    appPlugin("HelloExample", path: "Examples/Hello"),
    appPlugin("NotesExample", path: "Examples/Notes"),
    appPlugin("UploaderExample", path: "Examples/Uploader"),
    appPlugin("WeatherExample", path: "Examples/Weather"),
    appPlugin("CleanupExample", path: "Examples/Cleanup"),
    appPlugin("PlayerExample", path: "Examples/Player"),
    // park-loop.gpx is the route README.md replays beside it.
    appPlugin("RunTrackerExample", path: "Examples/RunTracker", exclude: ["park-loop.gpx"]),
    appPlugin("SoftphoneExample", path: "Examples/Softphone"),
    appPlugin("JournalExample", path: "Examples/Journal"),
    appPlugin("PagesExample", path: "Examples/Pages"),
    appPlugin("PodcastsExample", path: "Examples/Podcasts"),
    // Test fixtures: real plugins that the end-to-end tests and the benchmark launch.
    // Xcode's iOS App template, unchanged, on UIKit, BackgroundTasks and os (docs/porting.md, "Porting iOS code").
    // Built as Xcode 16 builds a new iOS project: Swift 5 language mode, no upcoming features.
    // Its `@main` would define `main`, which the test runner that links it (AppHostKitTests)
    // defines too: the entry point gets another name (docs/porting.md, "Porting iOS code").
    appPlugin(
        "XcodeTemplateFixture", path: "Tests/Fixtures/XcodeTemplate", dependencies: ["UIKit", "BackgroundTasks", "os"],
        swiftSettings: [
            .swiftLanguageMode(.v5),
            .unsafeFlags(["-Xfrontend", "-entry-point-function-name", "-Xfrontend", "XcodeTemplateFixture_main"]),
        ]),
    // Ordinary URLSessions and a background one in one file under import UIKit, as iOS code
    // writes them (Swift 5 mode, as Xcode builds a new project).
    appPlugin(
        "NetworkerFixture", path: "Tests/Fixtures/Networker", dependencies: ["UIKit"],
        swiftSettings: [
            .swiftLanguageMode(.v5),
            .unsafeFlags(["-Xfrontend", "-entry-point-function-name", "-Xfrontend", "NetworkerFixture_main"]),
        ]),
    // Delegates written as public iOS projects write them, each built unchanged (docs/porting.md, "Porting
    // iOS code"): @UIApplicationMain, NSObject delegates, Apple's module names, the UI a delegate
    // sets up. Swift 5 mode as Xcode builds them, or Swift 6; UIKitCorpusTests launches each.
    appPlugin("DelegatesLegacyMainFixture", path: "Tests/Fixtures/Delegates/LegacyMain", dependencies: appleModules, swiftSettings: [.swiftLanguageMode(.v5)]),
    appPlugin("DelegatesLegacyScenesFixture", path: "Tests/Fixtures/Delegates/LegacyScenes", dependencies: appleModules, swiftSettings: [.swiftLanguageMode(.v5)]),
    appPlugin("DelegatesFrameworksFixture", path: "Tests/Fixtures/Delegates/Frameworks", dependencies: appleModules, swiftSettings: [.swiftLanguageMode(.v5)]),
    appPlugin("DelegatesAdaptorFixture", path: "Tests/Fixtures/Delegates/Adaptor", dependencies: appleModules, swiftSettings: [.swiftLanguageMode(.v6)]),
    appPlugin("DelegatesScenesFixture", path: "Tests/Fixtures/Delegates/Scenes", dependencies: appleModules, swiftSettings: [.swiftLanguageMode(.v6)]),
    appPlugin("DelegatesMainSwift6Fixture", path: "Tests/Fixtures/Delegates/MainSwift6", dependencies: appleModules, swiftSettings: [.swiftLanguageMode(.v6)]),
    appPlugin("ProbeFixture", path: "Tests/Fixtures/Probe", dependencies: ["ProbeSyscalls", "CSQLite", "AppHostProtocol", "CAppHostShims", .product(name: "Logging", package: "swift-log")]),
]

// A package that depends on apphost builds only what its targets use: AppHostKit (with
// AppHostProtocol and AppHostSystem), the BundleApp plugin, and for its tests AppHostTesting
// (with AppHostRuntime) and the apphost and apphost-init products it builds for TestHost
// (Examples/TodoApp is such a package; it is not part of this one). The examples and fixtures below
// are products only so that `bundle-app --all` and the tests here can build them; SwiftPM 6.3
// builds a dependency's products only when a dependent names them (checked with a throwaway
// package depending on this one by path: Sources/AppHostKit/AppHostKit.docc/WritingAnApp.md, "Writing an app"). No `platforms`: apphost
// is Linux only, where SwiftPM ignores them.
let package = Package(
    name: "apphost",
    products: [
        .executable(name: "apphost", targets: ["apphost"]),
        // The init of each app's PID namespace; apphost finds it beside itself.
        .executable(name: "apphost-init", targets: ["apphost-init"]),
        // What each app process runs; apphost finds it beside itself.
        .executable(name: "apphost-app", targets: ["apphost-app"]),
        .library(name: "AppHostKit", targets: ["AppHostKit"]),
        // Apple's module names for AppHostKit's life-cycle subset, so iOS code compiles unchanged
        // (docs/porting.md, "Porting iOS code"). Linked statically into each app, as AppHostKit is.
        .library(name: "UIKit", targets: ["UIKit"]),
        .library(name: "BackgroundTasks", targets: ["BackgroundTasks"]),
        .library(name: "os", targets: ["os"]),
        .library(name: "OSLog", targets: ["OSLog"]),
        .library(name: "AVFoundation", targets: ["AVFoundation"]),
        .library(name: "AVFAudio", targets: ["AVFAudio"]),
        .library(name: "CoreLocation", targets: ["CoreLocation"]),
        .library(name: "PushKit", targets: ["PushKit"]),
        .library(name: "CallKit", targets: ["CallKit"]),
        .library(name: "UserNotifications", targets: ["UserNotifications"]),
        // For an app's own tests: a real host on a private instance (Sources/AppHostTesting/AppHostTesting.docc/TestingYourApp.md, "Testing your app").
        .library(name: "AppHostTesting", targets: ["AppHostTesting"]),
        .plugin(name: "BundleApp", targets: ["BundleApp"]),
        // An app author's loop in one command: build, bundle into .build/apps, test.
        .plugin(name: "AppHostTest", targets: ["AppHostTest"]),
        // A shared object that is not an apphost plugin, and one whose ABI record is forged:
        // the runner must refuse both with a clear message.
        .library(name: "NotAPluginFixture", type: .dynamic, targets: ["NotAPluginFixture"]),
        .library(name: "ForeignPluginFixture", type: .dynamic, targets: ["ForeignPluginFixture"]),
        .library(name: "OtherABIPluginFixture", type: .dynamic, targets: ["OtherABIPluginFixture"]),
    ] + apps.map(\.0),
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        // errno's values and their words (Errno), under AppHostSystem's SystemError.
        .package(url: "https://github.com/apple/swift-system", from: "1.4.0"),
        // The host's one timer keeps every deadline in a heap (HostTimers).
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        // `swift package generate-documentation`: the SDK's and AppHostTesting's DocC catalogs
        // (scripts/docs).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: [
        // C: syscalls and macros that do not import into Swift. Never a product.
        .target(name: "CAppHostShims"),
        // C: epoll for the readers of the control sockets (the host's, and the SDK's in each app). Never a product.
        .target(name: "CAppHostEpoll"),
        // C: the app process's crash and watchdog handlers (async-signal-safe) and the record
        // they send the host. libgcc_s's unwinder reads the unwind tables.
        .target(name: "CAppHostCrash", linkerSettings: [.linkedLibrary("gcc_s")]),
        // libcap, from Debian's libcap-dev (scripts/setup installs it).
        .systemLibrary(name: "CCap", pkgConfig: "libcap", providers: [.apt(["libcap-dev"])]),
        // libseccomp, from Debian's libseccomp-dev.
        .systemLibrary(name: "CSeccomp", pkgConfig: "libseccomp", providers: [.apt(["libseccomp-dev"])]),
        // libcurl, from Debian's libcurl4-openssl-dev: the host's transfer engine (AppHostTransfers).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The system's SQLite, from Debian's libsqlite3-dev: the Probe fixture holds a database
        // open in a transaction in an app-group container (0xdead10cc).
        .systemLibrary(name: "CSQLite", path: "Tests/Fixtures/CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // C: what is compiled into every plugin and nothing else (only the SDK depends on it):
        // the ABI record, and the look-up of the plugin's own classes.
        .target(name: "CAppHostKitRecord", dependencies: ["CAppHostShims"]),

        // The one errno path, descriptors, /proc readers and cgroup directories (no Foundation:
        // every plugin links it, through the SDK).
        .target(
            name: "AppHostSystem",
            dependencies: [.product(name: "SystemPackage", package: "swift-system")],
            swiftSettings: strictSettings + sdkSettings
        ),
        .target(
            name: "AppHostProtocol",
            dependencies: ["AppHostSystem", "CAppHostShims"],
            swiftSettings: strictSettings + sdkSettings
        ),
        .target(
            name: "AppHostKit",
            dependencies: [
                "AppHostProtocol", "AppHostSystem", "CAppHostShims", "CAppHostEpoll", "CAppHostKitRecord",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings + sdkSettings
        ),
        .target(name: "UIKit", dependencies: ["AppHostKit", "_Testing_UIKit", "AppleModuleMaps"], swiftSettings: strictSettings),
        // C: the Clang modules UIKit (for @UIApplicationMain) and os.log (for `import os.log`),
        // passed only to the targets that depend on UIKit or os (its module.modulemap). Never a product.
        .target(name: "AppleModuleMaps"),
        // Empty: what the compiler imports for a file that imports both Testing and UIKit (Overlay.swift).
        .target(name: "_Testing_UIKit", swiftSettings: strictSettings),
        .target(name: "BackgroundTasks", dependencies: ["AppHostKit"], swiftSettings: strictSettings),
        .target(
            name: "os",
            dependencies: ["AppHostKit", "AppleModuleMaps", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strictSettings
        ),
        // Apple's module names for what AppHostKit has of each framework: each re-exports
        // AppHostKit and Foundation, as the framework's import brings Foundation (README.md,
        // "Porting iOS code"). OSLog re-exports os.
        .target(name: "OSLog", dependencies: ["os"], swiftSettings: strictSettings),
        .target(name: "AVFoundation", dependencies: ["AppHostKit"], swiftSettings: strictSettings),
        .target(name: "AVFAudio", dependencies: ["AppHostKit"], swiftSettings: strictSettings),
        .target(name: "CoreLocation", dependencies: ["AppHostKit"], swiftSettings: strictSettings),
        .target(name: "PushKit", dependencies: ["AppHostKit"], swiftSettings: strictSettings),
        .target(name: "CallKit", dependencies: ["AppHostKit"], swiftSettings: strictSettings),
        .target(name: "UserNotifications", dependencies: ["AppHostKit"], swiftSettings: strictSettings),
        .target(
            name: "AppHostSandbox",
            dependencies: ["AppHostSystem", "CCap", "CSeccomp", "CAppHostShims"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AppHostRunner",
            dependencies: ["AppHostProtocol", "AppHostSandbox", "AppHostSystem", "CAppHostShims", "CAppHostCrash"],
            swiftSettings: strictSettings
        ),
        .target(
            name: "AppHostRuntime",
            dependencies: [
                "AppHostProtocol",
                "AppHostSandbox",
                "AppHostSystem",
                "CAppHostShims",
                "CAppHostEpoll",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "HeapModule", package: "swift-collections"),
                "CAppHostCrash",
            ],
            swiftSettings: strictSettings
        ),
        // The host's HTTP transfers (background URL sessions), on libcurl: linked by the apphost
        // executable alone, never by an app, AppHostRuntime or an app's tests.
        .target(
            name: "AppHostTransfers",
            dependencies: ["AppHostRuntime", "AppHostProtocol", "AppHostSystem", "CCurl"],
            swiftSettings: strictSettings
        ),
        // TestHost: runs the apphost binary for a test and reads its events and reports, which
        // are AppHostRuntime's types (it brings no ArgumentParser).
        .target(
            name: "AppHostTesting",
            dependencies: ["AppHostRuntime", "AppHostSystem", "CAppHostShims"],
            swiftSettings: strictSettings
        ),
        .executableTarget(
            name: "apphost",
            dependencies: [
                "AppHostRuntime",
                "AppHostTransfers",
                "AppHostRunner",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strictSettings,
            plugins: ["BuildInfo"]
        ),
        // Bakes the git commit of the build into apphost (`apphost --version`).
        .plugin(name: "BuildInfo", capability: .buildTool()),
        // The app processes' binary: the launch template and the exec launcher's app process
        // (Sources/apphost-app/main.swift). The runner alone: nothing of the host's.
        .executableTarget(name: "apphost-app", dependencies: ["AppHostRunner"], swiftSettings: strictSettings),
        // C, and nothing but libc and CAppHostShims: one short exec per launch (Sources/apphost-init/main.c).
        .executableTarget(name: "apphost-init", dependencies: ["CAppHostShims"], linkerSettings: [.unsafeFlags(["-static-executable", "-Xlinker", "--gc-sections", "-Xlinker", "-s"])]),
        .plugin(
            name: "BundleApp",
            capability: .command(
                intent: .custom(verb: "bundle-app", description: "Build app plugin products into Name.app bundles"),
                permissions: [.writeToPackageDirectory(reason: "writes Name.app bundles into the output directory")]
            )
        ),
        .plugin(
            name: "AppHostTest",
            capability: .command(
                intent: .custom(verb: "apphost-test", description: "Build the package, bundle its apps into .build/apps and run its tests")
            )
        ),
        .executableTarget(
            name: "apphost-benchmark",
            dependencies: [
                "AppHostRuntime", "AppHostProtocol", "AppHostSandbox", "AppHostSystem", "AppHostTransfers",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Benchmarks/Lifecycle",
            swiftSettings: strictSettings
        ),
        // The fault-injection run (scripts/chaos): hosts killed at the moments that matter.
        .executableTarget(
            name: "apphost-chaos",
            dependencies: ["AppHostRuntime", "AppHostProtocol", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            path: "Benchmarks/Chaos",
            swiftSettings: strictSettings
        ),

        .target(name: "NotAPluginFixture", path: "Tests/Fixtures/NotAPlugin"),
        // C: the raw system calls the Probe fixture tries against its sandbox.
        .target(name: "ProbeSyscalls", path: "Tests/Fixtures/ProbeSyscalls"),
        .target(name: "ForeignPluginFixture", dependencies: ["CAppHostShims"], path: "Tests/Fixtures/ForeignPlugin"),
        .target(name: "OtherABIPluginFixture", dependencies: ["CAppHostShims"], path: "Tests/Fixtures/OtherABIPlugin"),

        .testTarget(
            name: "AppHostRuntimeTests",
            dependencies: ["AppHostRuntime", "AppHostProtocol", "AppHostSystem", "CAppHostShims", "CAppHostCrash"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AppHostKitTests",
            dependencies: ["AppHostKit", "UIKit", "BackgroundTasks", "os", "XcodeTemplateFixture"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "AppHostTestingTests",
            dependencies: ["AppHostTesting", "AppHostSystem", "CAppHostShims"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "CommandLineTests",
            dependencies: ["apphost", "AppHostRuntime"],
            swiftSettings: strictSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["CAppHostShims", "AppHostSystem"],
            // The recorded walks GoldenWalkTests compares against, read from the source tree.
            exclude: ["Goldens"],
            swiftSettings: strictSettings
        ),
    ] + apps.map(\.1)
)
