import Domain
import Foundation
import Hummingbird
import Synchronization

/// User-facing messages of refusals, in the languages of the apps Berth serves: English,
/// Vietnamese, Italian, Ukrainian and Chinese. The code never changes with the language; a refusal
/// whose code has a message here answers it in the caller's language (`Accept-Language`, else the
/// tenant's `defaultLanguage`, else English), and a purchase refusal also carries a title and a
/// description an app can show as they are. Codes without one keep Berth's English message.
enum UserMessages {
    static let languages = Tenant.languages

    struct Message: Sendable {
        var title: String
        var description: String
        /// Whether it is a purchase refusal (answered with its title and description).
        var purchase: Bool
    }

    /// The language to answer in: the first of `Accept-Language` (by q, then order) that Berth
    /// speaks, else the tenant's default when it speaks it, else English.
    static func language(acceptLanguage: String?, tenantDefault: String?) -> String {
        if let header = acceptLanguage {
            var ranked: [(tag: String, q: Double, order: Int)] = []
            for (order, part) in header.split(separator: ",").prefix(20).enumerated() {
                let pieces = part.split(separator: ";")
                guard let first = pieces.first else { continue }
                let tag = first.trimmingCharacters(in: .whitespaces).lowercased()
                var q = 1.0
                for parameter in pieces.dropFirst() {
                    let pair = parameter.trimmingCharacters(in: .whitespaces)
                    if pair.hasPrefix("q="), let value = Double(pair.dropFirst(2)), value.isFinite { q = value }
                }
                guard q > 0, !tag.isEmpty else { continue }
                ranked.append((tag, q, order))
            }
            for entry in ranked.sorted(by: { ($0.q, -$0.order) > ($1.q, -$1.order) }) {
                let primary = String(entry.tag.split(separator: "-").first ?? "")
                if languages.contains(primary) { return primary }
            }
        }
        if let tenantDefault = tenantDefault?.lowercased(), languages.contains(tenantDefault) { return tenantDefault }
        return "en"
    }

    static func message(_ code: ErrorCode, language: String) -> Message? {
        guard let texts = catalog[code.rawValue], let index = languages.firstIndex(of: language), index < texts.count else { return nil }
        return Message(title: texts[index].0, description: texts[index].1, purchase: purchaseCodes.contains(code.rawValue))
    }

    /// Refusals of a purchase (verify-purchase, the validators, the /v1 purchase), answered with a title and a description.
    static let purchaseCodes: Set<String> = [
        "transaction_already_used", "product_mismatch", "transaction_mismatch", "booking_not_found", "booking_not_payable", "booking_already_paid",
        "slot_unavailable", "account_token_mismatch", "account_token_missing", "sandbox_not_allowed", "wrong_environment", "wrong_bundle",
        "bad_signature", "bad_chain", "untrusted_root", "malformed", "transaction_revoked", "unknown_product", "transaction_not_in_receipt",
        "receipt_without_purchases", "linked_to_other_account", "insufficient_credits", "temporarily_unavailable",
    ]

    /// code → (title, description) per language, in the order of `languages`.
    static let catalog: [String: [(String, String)]] = [
        "transaction_already_used": [
            ("Purchase already used", "This purchase has already been used by another account."),
            ("Giao dịch đã được sử dụng", "Giao dịch mua này đã được một tài khoản khác sử dụng."),
            ("Acquisto già utilizzato", "Questo acquisto è già stato utilizzato da un altro account."),
            ("Покупку вже використано", "Цю покупку вже використав інший обліковий запис."),
            ("购买已被使用", "此购买已被另一个账户使用。"),
        ],
        "product_mismatch": [
            ("Wrong product", "This purchase is not for the item you are paying for. Your payment is kept safe and will be checked."),
            (
                "Sai sản phẩm",
                "Giao dịch này không dành cho mục bạn đang thanh toán. Khoản thanh toán của bạn được lưu giữ an toàn và sẽ được kiểm tra."
            ),
            ("Prodotto errato", "Questo acquisto non corrisponde a ciò che stai pagando. Il tuo pagamento è al sicuro e verrà verificato."),
            ("Невідповідний товар", "Ця покупка не відповідає тому, за що ви платите. Ваш платіж збережено, його буде перевірено."),
            ("产品不符", "此次购买与您要支付的项目不符。您的付款已被妥善保存，我们会进行核查。"),
        ],
        "transaction_mismatch": [
            ("Purchase does not match", "The purchase details do not match. Please try again."),
            ("Giao dịch không khớp", "Thông tin giao dịch không khớp. Vui lòng thử lại."),
            ("L'acquisto non corrisponde", "I dettagli dell'acquisto non corrispondono. Riprova."),
            ("Покупка не збігається", "Дані покупки не збігаються. Спробуйте ще раз."),
            ("购买信息不匹配", "购买信息不匹配，请重试。"),
        ],
        "booking_not_found": [
            ("Booking not found", "We could not find this booking. If you were charged, your payment is kept safe and will be checked."),
            (
                "Không tìm thấy đặt chỗ",
                "Chúng tôi không tìm thấy đặt chỗ này. Nếu bạn đã bị trừ tiền, khoản thanh toán được lưu giữ an toàn và sẽ được kiểm tra."
            ),
            (
                "Prenotazione non trovata",
                "Non troviamo questa prenotazione. Se ti è stato addebitato un importo, il pagamento è al sicuro e verrà verificato."
            ),
            ("Бронювання не знайдено", "Ми не знайшли це бронювання. Якщо кошти списано, ваш платіж збережено, його буде перевірено."),
            ("未找到预订", "我们找不到此预订。如果您已被扣款，您的付款已被妥善保存，我们会进行核查。"),
        ],
        "booking_not_payable": [
            ("Booking can no longer be paid", "This booking is no longer waiting for payment. Your payment is recorded for a refund."),
            ("Không thể thanh toán đặt chỗ", "Đặt chỗ này không còn chờ thanh toán. Khoản thanh toán của bạn đã được ghi nhận để hoàn tiền."),
            ("Prenotazione non più pagabile", "Questa prenotazione non è più in attesa di pagamento. Il tuo pagamento è registrato per il rimborso."),
            ("Бронювання вже не можна оплатити", "Це бронювання більше не очікує оплати. Ваш платіж зареєстровано для повернення коштів."),
            ("预订已无法支付", "此预订不再等待付款。您的付款已登记以便退款。"),
        ],
        "booking_already_paid": [
            ("Booking already paid", "This booking has already been paid. Your extra payment is recorded for a refund."),
            ("Đặt chỗ đã được thanh toán", "Đặt chỗ này đã được thanh toán. Khoản thanh toán thừa đã được ghi nhận để hoàn tiền."),
            ("Prenotazione già pagata", "Questa prenotazione è già stata pagata. Il pagamento in più è registrato per il rimborso."),
            ("Бронювання вже оплачено", "Це бронювання вже оплачено. Зайвий платіж зареєстровано для повернення коштів."),
            ("预订已支付", "此预订已支付。多付的款项已登记以便退款。"),
        ],
        "slot_taken": [
            ("Time slot not available", "This time is already booked. Please choose another time."),
            ("Khung giờ không còn trống", "Thời gian này đã được đặt. Vui lòng chọn thời gian khác."),
            ("Orario non disponibile", "Questo orario è già prenotato. Scegli un altro orario."),
            ("Час недоступний", "Цей час уже заброньовано. Будь ласка, оберіть інший час."),
            ("时段不可用", "此时段已被预订。请选择其他时间。"),
        ],
        "slot_unavailable": [
            ("Time slot no longer available", "Someone else took this time slot. Your payment is recorded for a refund."),
            ("Khung giờ không còn trống", "Khung giờ này đã có người khác đặt. Khoản thanh toán của bạn đã được ghi nhận để hoàn tiền."),
            ("Orario non più disponibile", "Qualcun altro ha prenotato questo orario. Il tuo pagamento è registrato per il rimborso."),
            ("Час більше недоступний", "Цей час уже забронював хтось інший. Ваш платіж зареєстровано для повернення коштів."),
            ("时段已不可用", "此时段已被他人预订。您的付款已登记以便退款。"),
        ],
        "account_token_mismatch": [
            ("Bought with another account", "This purchase was made while signed in to another account of the app."),
            ("Mua bằng tài khoản khác", "Giao dịch này được thực hiện khi đăng nhập bằng một tài khoản khác của ứng dụng."),
            ("Acquistato con un altro account", "Questo acquisto è stato fatto con un altro account dell'app."),
            ("Куплено з іншого облікового запису", "Цю покупку здійснено з іншого облікового запису застосунку."),
            ("由其他账户购买", "此购买是在登录本应用的另一个账户时完成的。"),
        ],
        "account_token_missing": [
            ("Purchase not linked to your account", "This purchase is not linked to an account. Please update the app and try again."),
            ("Giao dịch chưa liên kết tài khoản", "Giao dịch này chưa được liên kết với tài khoản. Vui lòng cập nhật ứng dụng và thử lại."),
            ("Acquisto non collegato al tuo account", "Questo acquisto non è collegato a un account. Aggiorna l'app e riprova."),
            ("Покупку не пов'язано з вашим обліковим записом", "Ця покупка не пов'язана з обліковим записом. Оновіть застосунок і спробуйте ще раз."),
            ("购买未关联您的账户", "此购买未关联到账户。请更新应用后重试。"),
        ],
        "sandbox_not_allowed": [
            ("Test purchase", "Test purchases do not count in this app."),
            ("Giao dịch thử nghiệm", "Giao dịch thử nghiệm không được tính trong ứng dụng này."),
            ("Acquisto di prova", "Gli acquisti di prova non valgono in questa app."),
            ("Тестова покупка", "Тестові покупки в цьому застосунку не зараховуються."),
            ("测试购买", "测试购买在此应用中无效。"),
        ],
        "wrong_environment": [
            ("Test purchase", "This purchase was made in another App Store environment and does not count here."),
            ("Giao dịch thử nghiệm", "Giao dịch này được thực hiện trong môi trường App Store khác và không được tính ở đây."),
            ("Acquisto di prova", "Questo acquisto è stato fatto in un altro ambiente dell'App Store e qui non vale."),
            ("Тестова покупка", "Цю покупку здійснено в іншому середовищі App Store, тут вона не зараховується."),
            ("测试购买", "此购买来自另一个 App Store 环境，在此无效。"),
        ],
        "wrong_bundle": [
            ("Purchase from another app", "This purchase belongs to another app."),
            ("Giao dịch của ứng dụng khác", "Giao dịch này thuộc về một ứng dụng khác."),
            ("Acquisto di un'altra app", "Questo acquisto appartiene a un'altra app."),
            ("Покупка з іншого застосунку", "Ця покупка належить іншому застосунку."),
            ("来自其他应用的购买", "此购买属于另一个应用。"),
        ],
        "bad_signature": [
            ("Purchase could not be verified", "The App Store could not confirm this purchase."),
            ("Không thể xác minh giao dịch", "App Store không thể xác nhận giao dịch này."),
            ("Impossibile verificare l'acquisto", "L'App Store non ha potuto confermare questo acquisto."),
            ("Не вдалося перевірити покупку", "App Store не підтвердив цю покупку."),
            ("无法验证购买", "App Store 无法确认此购买。"),
        ],
        "bad_chain": [
            ("Purchase could not be verified", "The App Store could not confirm this purchase."),
            ("Không thể xác minh giao dịch", "App Store không thể xác nhận giao dịch này."),
            ("Impossibile verificare l'acquisto", "L'App Store non ha potuto confermare questo acquisto."),
            ("Не вдалося перевірити покупку", "App Store не підтвердив цю покупку."),
            ("无法验证购买", "App Store 无法确认此购买。"),
        ],
        "untrusted_root": [
            ("Purchase could not be verified", "The App Store could not confirm this purchase."),
            ("Không thể xác minh giao dịch", "App Store không thể xác nhận giao dịch này."),
            ("Impossibile verificare l'acquisto", "L'App Store non ha potuto confermare questo acquisto."),
            ("Не вдалося перевірити покупку", "App Store не підтвердив цю покупку."),
            ("无法验证购买", "App Store 无法确认此购买。"),
        ],
        "malformed": [
            ("Purchase could not be read", "The purchase data is damaged. Please restore your purchases and try again."),
            ("Không thể đọc giao dịch", "Dữ liệu giao dịch bị hỏng. Vui lòng khôi phục giao dịch mua và thử lại."),
            ("Impossibile leggere l'acquisto", "I dati dell'acquisto sono danneggiati. Ripristina gli acquisti e riprova."),
            ("Не вдалося прочитати покупку", "Дані покупки пошкоджено. Відновіть покупки й спробуйте ще раз."),
            ("无法读取购买信息", "购买数据已损坏。请恢复购买后重试。"),
        ],
        "transaction_revoked": [
            ("Purchase refunded", "This purchase was refunded and no longer counts."),
            ("Giao dịch đã hoàn tiền", "Giao dịch này đã được hoàn tiền và không còn hiệu lực."),
            ("Acquisto rimborsato", "Questo acquisto è stato rimborsato e non vale più."),
            ("Покупку повернено", "За цю покупку повернено кошти, вона більше не діє."),
            ("购买已退款", "此购买已退款，不再有效。"),
        ],
        "unknown_product": [
            ("Item not available", "This item is not sold in the app. Your payment is kept safe and will be checked."),
            (
                "Sản phẩm không khả dụng",
                "Sản phẩm này không được bán trong ứng dụng. Khoản thanh toán của bạn được lưu giữ an toàn và sẽ được kiểm tra."
            ),
            ("Articolo non disponibile", "Questo articolo non è in vendita nell'app. Il tuo pagamento è al sicuro e verrà verificato."),
            ("Товар недоступний", "Цей товар не продається в застосунку. Ваш платіж збережено, його буде перевірено."),
            ("商品不可用", "此商品未在应用中出售。您的付款已被妥善保存，我们会进行核查。"),
        ],
        "transaction_not_in_receipt": [
            ("Purchase not found", "This purchase is not on this device yet. Please restore your purchases and try again."),
            ("Không tìm thấy giao dịch", "Giao dịch này chưa có trên thiết bị. Vui lòng khôi phục giao dịch mua và thử lại."),
            ("Acquisto non trovato", "Questo acquisto non è ancora su questo dispositivo. Ripristina gli acquisti e riprova."),
            ("Покупку не знайдено", "Цієї покупки ще немає на пристрої. Відновіть покупки й спробуйте ще раз."),
            ("未找到购买记录", "此设备上还没有这笔购买。请恢复购买后重试。"),
        ],
        "receipt_without_purchases": [
            ("No purchases yet", "There are no purchases on this device yet."),
            ("Chưa có giao dịch", "Thiết bị này chưa có giao dịch mua nào."),
            ("Nessun acquisto", "Su questo dispositivo non ci sono ancora acquisti."),
            ("Покупок ще немає", "На цьому пристрої ще немає покупок."),
            ("暂无购买", "此设备上还没有任何购买。"),
        ],
        "linked_to_other_account": [
            ("Subscription belongs to another account", "This subscription is already linked to another account of the app."),
            ("Gói đăng ký thuộc tài khoản khác", "Gói đăng ký này đã được liên kết với một tài khoản khác của ứng dụng."),
            ("Abbonamento di un altro account", "Questo abbonamento è già collegato a un altro account dell'app."),
            ("Підписка належить іншому обліковому запису", "Ця підписка вже пов'язана з іншим обліковим записом застосунку."),
            ("订阅属于其他账户", "此订阅已关联到本应用的另一个账户。"),
        ],
        "insufficient_credits": [
            ("Not enough credits", "You do not have enough credits. Please buy more to continue."),
            ("Không đủ Credits", "Bạn không đủ credits. Vui lòng mua thêm để tiếp tục."),
            ("Crediti insufficienti", "Non hai abbastanza crediti. Acquistane altri per continuare."),
            ("Недостатньо кредитів", "У вас недостатньо кредитів. Придбайте ще, щоб продовжити."),
            ("积分不足", "您的积分不足。请购买更多积分以继续。"),
        ],
        "temporarily_unavailable": [
            ("Temporarily unavailable", "The service is busy. Nothing was charged twice; please try again in a moment."),
            ("Tạm thời không khả dụng", "Dịch vụ đang bận. Không có khoản nào bị trừ hai lần; vui lòng thử lại sau giây lát."),
            ("Temporaneamente non disponibile", "Il servizio è occupato. Nessun addebito doppio; riprova tra poco."),
            ("Тимчасово недоступно", "Сервіс зайнятий. Подвійного списання не було; спробуйте ще раз за мить."),
            ("暂时不可用", "服务繁忙。不会重复扣款，请稍后重试。"),
        ],
        "rate_limited": [
            ("Too many requests", "Please wait a moment and try again."),
            ("Quá nhiều yêu cầu", "Vui lòng đợi một lát rồi thử lại."),
            ("Troppe richieste", "Attendi un momento e riprova."),
            ("Забагато запитів", "Зачекайте трохи й спробуйте ще раз."),
            ("请求过多", "请稍候再试。"),
        ],
        "unauthenticated": [
            ("Please sign in", "Your session has ended. Please sign in again."),
            ("Vui lòng đăng nhập", "Phiên đăng nhập đã hết hạn. Vui lòng đăng nhập lại."),
            ("Accedi", "La sessione è scaduta. Accedi di nuovo."),
            ("Увійдіть", "Сеанс завершився. Увійдіть ще раз."),
            ("请登录", "您的会话已结束，请重新登录。"),
        ],
    ]
}

/// The caller's language preferences for the request being served: `Accept-Language` from the
/// request, the tenant's default once the caller is known. Read when a refusal is rendered.
final class RequestLanguage: Sendable {
    @TaskLocal static var current: RequestLanguage?

    let acceptLanguage: String?
    let tenantDefault = Mutex<String?>(nil)
    /// The language a refusal's message was answered in (for `Content-Language`).
    let answered = Mutex<String?>(nil)

    init(acceptLanguage: String?) {
        self.acceptLanguage = acceptLanguage
    }

    var language: String {
        UserMessages.language(acceptLanguage: acceptLanguage, tenantDefault: tenantDefault.withLock { $0 })
    }
}

extension APIError {
    /// The refusal in the caller's language: a code with a message answers it (its description as
    /// `message` beyond English; title and description for purchase refusals).
    func localized() -> APIError {
        let request = RequestLanguage.current
        let language = request?.language ?? "en"
        var error = self
        guard let text = UserMessages.message(code, language: language) else {
            request?.answered.withLock { $0 = "en" }
            return error
        }
        request?.answered.withLock { $0 = language }
        if language != "en" { error.message = text.description }
        if text.purchase {
            error.title = text.title
            error.description = text.description
        }
        return error
    }
}
