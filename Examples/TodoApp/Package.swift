// swift-tools-version: 6.1
import PackageDescription

// An app in a package of its own, as an app author writes one (Sources/AppHostKit/AppHostKit.docc/WritingAnApp.md, "Writing an app" and
// "Testing your app"): the app plugin, unit tests that drive its delegate detached, and
// integration tests that run it under a real host with AppHostTesting. One command builds it,
// bundles it into .build/apps and runs the tests, with an installed apphost (scripts/install) or
// the one $APPHOST_EXECUTABLE names; the package never builds the host:
//
//     swift package apphost-test
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
