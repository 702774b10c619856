import ConfidantAuth
import ConfidantCrypto
import Foundation
import Observation

/// The account's settings: how it signs in (the chain, the arithmetic mapping and operand count,
/// the e-mail code length, TOTP enrolment confirmed by a current code), its devices (remove a lost
/// one), read receipts, and deleting the account. Every change to the account on the server asks
/// for the current password.
@MainActor @Observable
public final class SettingsViewModel {
    /// One of the account's devices, with its name and last activity.
    public typealias Device = OwnDevice

    /// A TOTP secret waiting to be confirmed with a code from the authenticator app.
    public struct TOTPEnrolment: Sendable, Equatable {
        /// The secret in base32, for typing in.
        public let secret: String
        /// The `otpauth://` URI, for a QR code.
        public let uri: String
    }

    /// How the account signs in, once loaded.
    public private(set) var signIn: SignInSettings?
    /// The account's devices, this one first.
    public private(set) var devices: [Device] = []
    /// What went wrong last, in words.
    public private(set) var error: String?
    /// What the last change did, in words.
    public private(set) var notice: String?
    /// The TOTP secret being enrolled, from `beginTOTPEnrolment` until confirmed.
    public private(set) var enrolment: TOTPEnrolment?
    /// Set once the account is deleted.
    public private(set) var isDeleted = false
    /// Whether peers learn that their messages were read (this profile's choice; no password).
    public private(set) var sendsReadReceipts = true
    private let messenger: Messenger

    /// Settings of `messenger`'s account.
    public init(messenger: Messenger) {
        self.messenger = messenger
    }

    /// Reads the sign-in settings and the devices from the server.
    public func load() async {
        do {
            sendsReadReceipts = await messenger.account.sendsReadReceipts
            signIn = try await messenger.signInSettings()
            devices = try await messenger.ownDevices()
            error = nil
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Changes the chain (password first) and the parameters given; `nil` leaves one as it is.
    /// A chain with TOTP needs a confirmed enrolment unless one is stored already.
    /// - Returns: whether the server took it; `error` says why not.
    @discardableResult
    public func updateSignIn(
        chain: [SignInMethod], operands: Int? = nil, mapping: String? = nil, codeLength: Int? = nil,
        totpCode: String? = nil, password: String
    ) async -> Bool {
        notice = nil
        guard chain.first == .password, Set(chain).count == chain.count, !chain.contains(.biometric) else {
            error = "The chain starts with the password and names each method once."
            return false
        }
        if let mapping {
            do { _ = try ArithmeticMapping(parsing: mapping) } catch {
                self.error = "The operator mapping: \(error)"
                return false
            }
        }
        var change = SignInSettingsChange(chain: chain, operands: operands, mapping: mapping, codeLength: codeLength)
        if chain.contains(.totp), let enrolment {
            guard let totpCode, !totpCode.isEmpty else {
                error = "Enter the current code from your authenticator app to confirm it."
                return false
            }
            change.totpSecret = enrolment.secret
            change.totpCode = totpCode
        } else if chain.contains(.totp), signIn?.totpEnrolled != true {
            error = "Set up an authenticator app first."
            return false
        }
        do {
            signIn = try await messenger.updateSignInSettings(change, password: password)
            enrolment = chain.contains(.totp) ? nil : enrolment
            error = nil
            notice = "Signing in now takes: " + chain.map(\.displayName).joined(separator: " → ")
            return true
        } catch {
            self.error = String(describing: error)
            return false
        }
    }

    /// A new TOTP secret to add to an authenticator app; `updateSignIn` with TOTP in the chain and
    /// a current code stores it.
    @discardableResult
    public func beginTOTPEnrolment() async -> TOTPEnrolment {
        let secret = TOTP.generateSecret()
        let account = await messenger.account.email
        let enrolment = TOTPEnrolment(
            secret: Base32.encode(secret).filter { $0 != "=" },
            uri: TOTP(secret: secret).provisioningURI(account: account))
        self.enrolment = enrolment
        return enrolment
    }

    /// Turns read receipts on or off for this profile; delivery receipts always go.
    public func setReadReceipts(_ enabled: Bool) async {
        do {
            try await messenger.setReadReceipts(enabled)
            sendsReadReceipts = enabled
            notice =
                enabled ? "Read receipts are on." : "Read receipts are off: nobody learns when you read their messages."
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Names one of the account's devices (this one too).
    /// - Returns: whether the server took the name; `error` says why not.
    @discardableResult
    public func renameDevice(_ id: UUID, to name: String) async -> Bool {
        do {
            try await messenger.renameDevice(id, to: name)
            notice = "The device is now called “\(name.trimmingCharacters(in: .whitespacesAndNewlines))”."
            await load()
            return true
        } catch {
            self.error = String(describing: error)
            return false
        }
    }

    /// Signs one of the account's other devices out for good.
    public func removeDevice(_ id: UUID) async {
        do {
            try await messenger.removeDevice(id)
            let removed = devices.first { $0.id == id }?.displayName ?? "Device \(id.canonicalString.prefix(8))"
            notice = "\(removed) is removed."
            await load()
        } catch {
            self.error = String(describing: error)
        }
    }

    /// Deletes the account on the server (the password again); this profile is signed out.
    public func deleteAccount(password: String) async {
        do {
            try await messenger.deleteAccount(password: password)
            isDeleted = true
        } catch {
            self.error = String(describing: error)
        }
    }
}
