import Testing
@testable import TodoApp

/// The list on its own: plain values, no SDK.
struct TodoListTests {
    @Test func aFirstLaunchStartsWithTwoItems() {
        #expect(TodoList.starter.summary == "Todo: 2 of 2 to do")
    }

    @Test func completingAndMerging() {
        var list = TodoList.starter
        list.complete("Buy milk")
        list.merge(["Write tests", "Call Ana"])
        #expect(list.items.map(\.title) == ["Buy milk", "Write tests", "Call Ana"])
        #expect(list.summary == "Todo: 2 of 3 to do")
    }
}
