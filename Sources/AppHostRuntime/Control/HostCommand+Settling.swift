extension HostCommand {
    /// Whose transitions in flight a command waits for before it runs (README.md, the command
    /// table): a launch, a move to the background, a suspension must be over, so that each
    /// command sees what the commands before it did.
    package enum Settling: Equatable {
        /// The command waits for nothing (`sleep`, `wait`, `quit`).
        case nothing
        /// The app the command names.
        case app(String)
        /// Every app: the command reads or acts on all of them, the foreground app, or the
        /// scheduler's requests.
        case everyApp
    }

    package var settling: Settling {
        switch self {
        case .interrupt(let app, _), .wake(let app), .terminate(let app), .fetch(let app), .runTask(let app, _),
             .expire(let app, _), .push(let app, _), .voipPush(let app, _), .audioInterrupt(let app), .audioResume(let app),
             .authorize(let app, _), .authorizeNotifications(let app, _), .closeScene(let app, _), .discardScene(let app, _):
            .app(app)
        case .memoryWarning(let app):
            app.map(Settling.app) ?? .everyApp
        case .home, .open, .openNewScene, .scenes, .switcher, .memoryPressure, .storagePressure, .locationSet, .locationRoute, .locationClear, .power, .network, .advance, .resetClock, .tasks, .transfers, .notifications, .tapNotification, .ps:
            .everyApp
        case .sleep, .wait, .help, .quit:
            .nothing
        }
    }
}
