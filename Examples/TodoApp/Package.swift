// swift-tools-version: 6.1
import PackageDescription

// An app in a package of its own, as an app author writes one (README.md, "Writing an app" and
// "Testing your app"): the app plugin, unit tests that drive its delegate detached, and
// integration tests that run it under a real host with AppHostTesting. Before `swift test`:
//
//     swift build --product apphost && swift build --product apphost-init && swift build --product apphost-app
//     swift package --allow-writing-to-package-directory bundle-app --all
let package = Package(
    name: "TodoApp",
    products: [.library(name: "TodoApp", type: .dynamic, targets: ["TodoApp"])],
    // name: "apphost" whatever the checkout's directory is called (or .package(url: …, from: …))
    dependencies: [.package(name: "apphost", path: "../..")],
    targets: [
        .target(
            name: "TodoApp",
            dependencies: [.product(name: "AppHostKit", package: "apphost")],
            exclude: ["Info.plist"]
        ),
        .testTarget(
            name: "TodoAppTests",
            dependencies: ["TodoApp", .product(name: "AppHostTesting", package: "apphost")]
        ),
    ]
)
