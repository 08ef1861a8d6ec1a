import Foundation

/// The to-do list: what the app shows, saves and syncs. Plain data, tested on its own.
struct TodoList: Codable, Equatable, Sendable {
    struct Item: Codable, Equatable, Sendable {
        var title: String
        var done = false
    }

    var items: [Item] = []

    /// What a first launch shows.
    static let starter = TodoList(items: [Item(title: "Buy milk"), Item(title: "Write tests")])

    /// The items not done yet.
    var remaining: Int { items.filter { !$0.done }.count }

    mutating func add(_ title: String) {
        items.append(Item(title: title))
    }

    mutating func complete(_ title: String) {
        for index in items.indices where items[index].title == title { items[index].done = true }
    }

    /// Adds the titles it does not have yet (a sync from a server, in a real app).
    mutating func merge(_ titles: [String]) {
        for title in titles where !items.contains(where: { $0.title == title }) { add(title) }
    }

    /// One line for the window, and so for the app-switcher snapshot.
    var summary: String {
        "Todo: \(remaining) of \(items.count) to do"
    }
}
