// swift-tools-version: 6.1
import PackageDescription

// An app's package that also builds cross-platform libraries which test `canImport(os)` and
// friends (swift-argument-parser's Mutex imports os when it can): SwiftPM puts every module of the
// build in one directory, so they see apphost's Apple-named modules whenever those were built
// first. scripts/test builds those first, then everything, then the apphost product (README.md,
// "Porting iOS code").
let package = Package(
    name: "ThirdParty",
    products: [.library(name: "Gallery", type: .dynamic, targets: ["Gallery"])],
    dependencies: [
        .package(name: "apphost", path: "../../.."),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
    ],
    targets: [
        .executableTarget(
            name: "Tool",
            dependencies: [
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .target(
            name: "Gallery",
            dependencies: [
                .product(name: "UIKit", package: "apphost"), .product(name: "os", package: "apphost"),
                .product(name: "OSLog", package: "apphost"), .product(name: "UserNotifications", package: "apphost"),
                .product(name: "AVFoundation", package: "apphost"), .product(name: "CoreLocation", package: "apphost"),
            ],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
    ]
)
