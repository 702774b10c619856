import ConfidantAPI
import Foundation

/// Why a message was not sent. `Messenger.retry` queues it again; its ``description`` is the
/// sentence a screen shows.
public enum DeliveryFailure: Sendable, Hashable, CustomStringConvertible {
    /// Held: the recipient's security key changed after the user verified it, and the send was
    /// not confirmed.
    case keyChangedSinceVerification(name: String)
    /// The recipient has signed in on no device yet.
    case noRecipientDevice
    /// The recipient's devices changed again while the message was sealed anew for them.
    case devicesKeptChanging
    /// The server refused the message for good.
    case refused(code: APIErrorCode, message: String)
    /// Anything else that stopped it here before the server took it (a file that cannot be read,
    /// an answer that cannot be read); the text says what.
    case other(String)

    /// The failure behind a refusal or an error that ended a delivery.
    init(_ error: ConfidantKitError) {
        if case .server(_, let code, let message) = error {
            self = .refused(code: code, message: message)
        } else {
            self = .other(error.description)
        }
    }

    public var description: String {
        switch self {
        case .keyChangedSinceVerification(let name):
            "held: \(name)'s security key changed after you verified it; compare safety numbers, then retry"
        case .noRecipientDevice: "the recipient has no signed-in device yet"
        case .devicesKeptChanging: "the recipient's devices kept changing; retry later"
        case .refused(let code, let message):
            ConfidantKitError.server(status: code.httpStatus, code: code, message: message).description
        case .other(let text): text
        }
    }
}

extension DeliveryFailure {
    /// The form kept in the local store's `message.failure` column: a small JSON object naming the
    /// case. Text that is not such an object (written before reasons were typed) reads as ``other(_:)``.
    var stored: String {
        let form: StoredForm =
            switch self {
            case .keyChangedSinceVerification(let name): StoredForm(reason: "key_changed", name: name)
            case .noRecipientDevice: StoredForm(reason: "no_device")
            case .devicesKeptChanging: StoredForm(reason: "devices_changing")
            case .refused(let code, let message): StoredForm(reason: "refused", code: code.rawValue, text: message)
            case .other(let text): StoredForm(reason: "other", text: text)
            }
        guard let data = try? JSONEncoder().encode(form) else { return description }
        return String(decoding: data, as: UTF8.self)
    }

    init(stored: String) {
        guard stored.hasPrefix("{"), let form = try? JSONDecoder().decode(StoredForm.self, from: Data(stored.utf8))
        else {
            self = .other(stored)
            return
        }
        switch form.reason {
        case "key_changed": self = .keyChangedSinceVerification(name: form.name ?? "the recipient")
        case "no_device": self = .noRecipientDevice
        case "devices_changing": self = .devicesKeptChanging
        case "refused": self = .refused(code: APIErrorCode(code: form.code ?? ""), message: form.text ?? "")
        default: self = .other(form.text ?? stored)
        }
    }

    private struct StoredForm: Codable {
        var reason: String
        var name: String?
        var code: String?
        var text: String?
    }
}
