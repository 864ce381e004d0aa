import Domain
import Foundation
import Testing

@Suite("One retry value for every background job")
struct JobRetryTests {
    @Test("each job's schedule, as its rows are given their next attempt")
    func schedules() {
        #expect((1...8).map { JobRetry.webhooks.delay(afterAttempts: $0) } == [5, 10, 20, 40, 80, 160, 320, 640])
        #expect(JobRetry.webhooks.delay(afterAttempts: 12) == 3600 && JobRetry.webhooks.delay(afterAttempts: Int.max) == 3600)
        #expect(JobRetry.webhooks.triesAgain(afterAttempts: 29) && !JobRetry.webhooks.triesAgain(afterAttempts: 30))
        #expect((1...10).map { JobRetry.playAcknowledgements.delay(afterAttempts: $0) } == [2, 4, 8, 16, 32, 64, 128, 256, 512, 600])
        #expect((1...7).map { JobRetry.cardPayments.delay(afterAttempts: $0) } == [10, 20, 40, 80, 160, 320, 600])
        #expect((1...7).map { JobRetry.consumptionAnswers.delay(afterAttempts: $0) } == [30, 120, 600, 1800, 3600, 3600, 3600])
        #expect(JobRetry.playAcknowledgements.triesAgain(afterAttempts: 1_000_000), "no limit: the job's own deadline decides")
    }

    @Test("counts from outside the process never trap: zero, negative and huge counts give the first or the last delay")
    func edges() {
        for retry in [JobRetry.webhooks, .playAcknowledgements, .cardPayments, .consumptionAnswers] {
            #expect(retry.delay(afterAttempts: 0) == retry.delay(afterAttempts: 1))
            #expect(retry.delay(afterAttempts: Int.min) == retry.delay(afterAttempts: 1))
            #expect(retry.delay(afterAttempts: Int.max) == retry.delay(afterAttempts: 1_000))
        }
        #expect(JobRetry.steps([]).delay(afterAttempts: 3) == 60)
        #expect(!JobRetry.exponential(first: 1, cap: 2, maximumAttempts: 0).triesAgain(afterAttempts: 1), "at least one attempt")
    }
}
