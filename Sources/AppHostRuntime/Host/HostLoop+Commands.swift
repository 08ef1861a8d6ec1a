import Foundation
import Dispatch

// The commands that act on the apps as a person at the device would: home, the app switcher,
// an interruption, a termination, memory running short (the command language's `home`,
// `switcher`, `interrupt`, `terminate`, `memory-warning`, `memory-pressure`).
extension HostLoop {
    /// Whether the next launch would take an app process made ahead that has finished starting
    /// (docs/launching.md, "How apps are launched"); nil under a launcher that makes none. For the
    /// benchmark, which measures launches from a ready one.
    var isStandbyWarm: Bool? { queue.sync { launchpad.isStandbyWarm } }

    /// Sends the foreground app to the background (`home`).
    func home() {
        queue.sync { sendForegroundAppAway(except: nil) }
    }

    /// Why `name` names no installed app ("no app named Nots; did you mean Notes? installed: …"),
    /// or nil when it names one: for `apphost ctl events --app`.
    func unknownApp(_ name: String) -> String? {
        queue.sync {
            do {
                _ = try app(named: name)
                return nil
            } catch {
                return (error as? SupervisorError)?.message ?? "\(error)"
            }
        }
    }

    /// Opens the app switcher (`switcher`): the foreground app resigns active until `open` or
    /// `home`. Returns the app's name; throws when no app is in the foreground.
    @discardableResult
    func openSwitcher() throws -> String {
        try queue.sync {
            guard let record = apps.foreground.min().map({ apps[$0] }) else {
                throw SupervisorError("no app is in the foreground", code: .wrongState)
            }
            try command(.openSwitcher, to: record)
            return record.bundle.name
        }
    }

    /// Interrupts the foreground app, for `duration` or until `open`/`home` (`interrupt APP`).
    func interrupt(_ name: String, for duration: Duration?) throws {
        try queue.sync { try command(.interrupt(duration), to: try app(named: name)) }
    }

    /// Terminates an app (`terminate APP`): `applicationWillTerminate` if it runs, nothing if it
    /// is suspended (a force quit).
    func terminate(_ name: String) throws {
        try queue.sync { try command(.terminate(byUser: true), to: try app(named: name)) }
    }

    /// Hands a user's command's `input` to the app's machine, or refuses it in the machine's
    /// words where the machine would not take it ("Notes is not in the foreground").
    func command(_ input: LifecycleMachine.Input, to record: AppRecord) throws {
        let machine = record.run?.machine ?? LifecycleMachine(policy: configuration.policy)
        if let refusal = machine.refusal(of: input) {
            throw SupervisorError("\(record.bundle.name) \(refusal)", code: .wrongState)
        }
        guard let run = record.run else { return }
        handle(record, run, input)
    }

    /// Sends `applicationDidReceiveMemoryWarning` to the named app, or to every running app.
    func memoryWarning(_ name: String?) throws {
        try queue.sync {
            let targets = try name.map { name in [try app(named: name)] } ?? Array(apps)
            for record in targets {
                if let run = record.run, run.machine.isAlive { handle(record, run, .memoryWarning) }
            }
        }
    }

    /// Simulates memory running short (`memory-pressure [MIB]`): running apps get
    /// `applicationDidReceiveMemoryWarning`; after the policy's grace, apps are ended without a
    /// callback (jetsam "vm-pageshortage"), suspended ones least recently used first and the
    /// foreground app last, until all apps together use at most `target` bytes. Without a
    /// target, every suspended app is ended and no running one.
    func memoryPressure(target: UInt64?) {
        queue.sync {
            performPressure(resources.pressureCommand(target: target, now: clock.now, apps: liveApps(measuring: true)))
        }
    }
}
