import StoreTesting
import Testing

@Suite("The test run's budget of open stores")
struct OpenStoreBudgetTests {
    @Test("a waiter is admitted when a place is given back, first come first served, and the budget is never exceeded")
    func admitsInTurn() async throws {
        let budget = OpenStoreBudget(limit: 1)
        await budget.enter()
        let second = Task { await budget.enter() }
        #expect(try await eventually(every: .milliseconds(5)) { budget.waiting == 1 })
        #expect(budget.open == 1)
        budget.leave()  // the place goes to the waiter, not back to the budget
        await second.value
        #expect(budget.open == 1 && budget.waiting == 0)
        budget.leave()
        #expect(budget.open == 0)
    }

    @Test("past its patience a waiter goes on over the budget, so that a store never closed cannot hang the run")
    func patienceFallback() async throws {
        let budget = OpenStoreBudget(limit: 1, patience: .milliseconds(10))
        await budget.enter()
        await budget.enter()
        #expect(budget.open == 2 && budget.waiting == 0)
    }
}
