import ArgumentParser
import AppHostRuntime
import Foundation

struct Container: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the path of an app's container (Documents, Library, tmp).",
        discussion: "APP is a bundle identifier, a Name.app bundle, or the last part of an identifier (notes for com.example.notes).")

    @OptionGroup var state: StateOptions

    @Argument(help: "The app.")
    var app: String

    func run() throws {
        do {
            let directory = StateDirectory(state.stateDirectory)
            print(try directory.container(of: app).path)
            if let image = try directory.unmountedImage(of: app) {
                FileHandle.standardError.write(Data((
                    "apphost: its files are in the disk image \(image), mounted there only while a host runs the app; "
                        + "without one, read a file with debugfs -R 'cat /Documents/FILE' \(image)\n").utf8))
            }
        } catch let error as SupervisorError {
            fail(error.message)
        }
    }
}

struct Erase: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Erase one app's data, or everything the instance keeps; refused while its host runs.",
        discussion: """
            With APP: its container (and the container's disk image) and its pending background requests; its \
            reports stay. Without: every container, app-group container, disk image, report and scheduler \
            request of the instance.
            """)

    @OptionGroup var state: StateOptions

    @Argument(help: "The app (as for apphost container); none: everything.")
    var app: String?

    func run() throws {
        do {
            let removed = try StateDirectory(state.stateDirectory).erase(app)
            if removed.isEmpty { print("nothing to erase in \(state.stateDirectory.path)") }
            removed.forEach { print("erased \($0)") }
        } catch let error as SupervisorError {
            fail(error.message)
        }
    }
}
