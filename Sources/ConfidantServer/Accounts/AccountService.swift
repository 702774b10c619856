import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Fluent
import Foundation
import NIOPosix

/// Accounts: sign-up, the profile (name, avatar), confirming the password before a sensitive
/// change, and deleting an account with everything it owns.
struct AccountService: Sendable {
    /// What sign-up is given, checked here.
    struct SignUp: Sendable {
        var email: String
        var password: String
        var firstName: String?
        var lastName: String?
        var displayName: String?
        var avatar: Data?
        var address: String
        /// An invite code, for a server that takes new accounts by invite only.
        var invite: String? = nil
    }

    let devices: DeviceService
    let revoker: SessionRevoker
    let passwords: PasswordPolicy
    let blobs: any BlobStore
    let configuration: ServerConfiguration
    /// Where password hashes run (slow on purpose), apart from the database's statements.
    let passwordHashing: NIOThreadPool

    private var mailbox: MailboxService { devices.mailbox }
    private var database: RelayDatabase { mailbox.publisher.database }
    private var now: Date { configuration.now() }
    private var throttle: Throttle { Throttle(policy: configuration.signInPolicy) }

    func signUp(_ form: SignUp) async throws -> UserRecord {
        let email = try Self.email(form.email)
        let firstName = try form.firstName.map { try Self.personalName($0, "first name") }
        let lastName = try form.lastName.map { try Self.personalName($0, "last name") }
        let shown = form.displayName ?? [firstName, lastName].compactMap { $0 }.joined(separator: " ")
        guard !shown.isEmpty else {
            throw APIFailure(.invalidDisplayName, "Give a first and last name, or a display name.")
        }
        let displayName = try Self.displayName(shown)
        // Each sign-up is counted as a failure, and the n-th is checked against the n - 1 before
        // it: with one fewer free, exactly `freeSignUpsPerAddress` go before the delays.
        let throttle = Throttle(
            policy: configuration.signInPolicy, freeFailures: max(0, configuration.freeSignUpsPerAddress - 1))
        // Per address (bulk account creation) and per e-mail address (probing which are taken).
        let keys = ["sign-up/address/\(form.address)", "sign-up/account/\(email)"]
        let now = now
        // Every attempt counts, successful or not (guessing invite codes too).
        _ = try await throttle.reserve(keys, on: database, now: now)
        let invite = try Self.invite(form.invite, registration: configuration.registration)

        try passwords.check(form.password, email: email)
        let avatar = try form.avatar.map {
            try AvatarImage(checking: $0, declared: nil, limit: configuration.maximumAvatarBytes)
        }
        let existing = try await UserRecord.query(on: database.db).filter(\.$email == email).first()
        if existing?.emailVerifiedAt != nil {
            throw APIFailure(.emailTaken, "An account with this e-mail address exists; sign in instead.")
        }
        let hash = try await passwords.hash(form.password, on: passwordHashing)
        // An account whose address was never proved belongs to nobody yet: signing up again
        // replaces it (whoever receives the code sent to the address then owns it), so that
        // registering someone else's address first cannot keep them out.
        let user = existing ?? UserRecord(email: email, displayName: displayName, passwordHash: hash, createdAt: now)
        user.displayName = displayName
        user.displayNameKey = displayName.lowercased()
        user.passwordHash = hash
        user.createdAt = now
        user.firstName = firstName
        user.lastName = lastName
        user.avatar = avatar?.bytes
        user.avatarType = avatar?.type
        user.avatarDigest = avatar.map { AvatarImage.digest(of: $0.bytes) }
        do {
            try await database.write { db in
                if let id = existing?.id {
                    try await SignInTransactionRecord.query(on: db).filter(\.$userID == id).delete()
                    try await user.update(on: db)
                } else {
                    // Replacing an account whose address was never proved spends no invite: its
                    // sign-up spent one.
                    if let invite { try await InviteService.spend(invite, on: db, now: now) }
                    try await user.create(on: db)
                }
            }
        } catch let error as any DatabaseError where error.isConstraintFailure {
            throw APIFailure(.emailTaken, "An account with this e-mail address exists; sign in instead.")
        }
        return user
    }

    /// The invite code sign-up must spend, per the server's registration setting.
    private static func invite(_ code: String?, registration: Registration) throws -> String? {
        switch registration {
        case .open: return nil
        case .closed:
            throw APIFailure(.registrationClosed, "This server takes no new accounts; ask its operator.")
        case .invite:
            guard let code, !code.allSatisfy(\.isWhitespace) else {
                throw APIFailure(
                    .inviteRequired,
                    "This server takes new accounts by invite only: sign up with the invite code its operator gave you."
                )
            }
            return code
        }
    }

    /// Changes the caller's names; what is nil stays. The directory shows the new display name at
    /// once; peers' clients take it with the next key lookup.
    func updateProfile(of caller: Caller, firstName: String?, lastName: String?, displayName: String?) async throws
        -> UserRecord
    {
        guard firstName != nil || lastName != nil || displayName != nil else {
            throw APIFailure(.malformedRequest, "Give a first name, a last name or a display name to change.")
        }
        let first = try firstName.map { try Self.personalName($0, "first name") }
        let last = try lastName.map { try Self.personalName($0, "last name") }
        let shown = try displayName.map { try Self.displayName($0) }
        guard let user = try await user(caller.userID) else { throw APIFailure.unauthenticated }
        if let first { user.firstName = first }
        if let last { user.lastName = last }
        if let shown {
            user.displayName = shown
            user.displayNameKey = shown.lowercased()
        }
        try await database.write { db in try await user.update(on: db) }
        return user
    }

    func user(_ id: UUID) async throws -> UserRecord? {
        try await UserRecord.find(id, on: database.db)
    }

    func user(email: String) async throws -> UserRecord? {
        try await UserRecord.query(on: database.db).filter(\.$email == email).first()
    }

    /// Checks the signed-in caller's password again before a sensitive change, under the same
    /// throttle as sign-in. `otherwise` says what did not happen.
    func confirmPassword(_ password: String, of caller: Caller, otherwise: String) async throws -> UserRecord {
        guard let user = try await user(caller.userID) else { throw APIFailure.unauthenticated }
        let reservation = try await throttle.reserve(["sign-in/account/\(user.email)"], on: database, now: now)
        guard try await passwords.verify(password, against: user.passwordHash, on: passwordHashing) else {
            throw APIFailure(.invalidCredentials, "The password is wrong; \(otherwise).")
        }
        try await reservation.release()
        return user
    }

    /// Deletes the caller's account after checking the password: devices (peers are told), blobs,
    /// mailboxes, conversations, sessions.
    func delete(_ caller: Caller, password: String) async throws {
        _ = try await confirmPassword(password, of: caller, otherwise: "the account was not deleted")
        try await erase(caller.userID)
    }

    /// Deletes the account `userID` with everything it owns (the operator's `admin account
    /// delete` too); `alsoIn` runs in the same transaction. Its streams close at once.
    func erase(_ userID: UUID, alsoIn extra: @escaping @Sendable (any Database) async throws -> Void = { _ in })
        async throws
    {
        let now = now
        let devices = devices
        let blobs = try await mailbox.write { db, publication -> [UUID] in
            try await extra(db)
            for device in try await DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$retiredAt == nil)
                .all()
            {
                try await devices.announce(
                    .removed, of: DeviceAddress(userID: userID, deviceID: device.deviceID), identity: nil, at: now,
                    in: db, publishing: publication)
            }
            let blobs = try await BlobRecord.query(on: db).filter(\.$ownerID == userID).all().compactMap(\.id)
            try await BlobGrantRecord.query(on: db).filter(\.$blobID ~~ blobs).delete()
            try await BlobRecord.query(on: db).filter(\.$ownerID == userID).delete()
            try await BlobGrantRecord.query(on: db).filter(\.$recipientID == userID).delete()
            try await MailboxTable.deleteAll(of: userID, on: db)
            publication.withdraw(user: userID)
            try await ConversationRecord.query(on: db).group(.or) {
                $0.filter(\.$ownerID == userID).filter(\.$peerID == userID)
            }.delete()
            try await PostedMessageTable.deleteAll(sentBy: userID, on: db)
            try await SessionRecord.query(on: db).filter(\.$userID == userID).delete()
            try await DeviceRecord.query(on: db).filter(\.$userID == userID).delete()
            try await UserRecord.query(on: db).filter(\.$id == userID).delete()
            return blobs
        }
        await revoker.revoked(.account(userID))
        await self.blobs.remove(blobs)
    }

    func setAvatar(_ image: AvatarImage, of caller: Caller) async throws {
        try await database.write { db in
            try await UserRecord.query(on: db).filter(\.$id == caller.userID).set(\.$avatar, to: image.bytes)
                .set(\.$avatarType, to: image.type).set(\.$avatarDigest, to: AvatarImage.digest(of: image.bytes))
                .update()
        }
    }

    func avatar(of userID: UUID) async throws -> AvatarImage {
        guard let user = try await user(userID), let bytes = user.avatar else {
            throw APIFailure.notFound("That avatar")
        }
        return AvatarImage(bytes: bytes, type: user.avatarType == AvatarImage.jpeg ? AvatarImage.jpeg : AvatarImage.png)
    }

    // MARK: Checks

    static func email(_ raw: String) throws(APIFailure) -> String {
        do { return try EmailAddress(raw).value } catch { throw APIFailure(.invalidEmail, error.description) }
    }

    static func personalName(_ raw: String, _ field: String) throws(APIFailure) -> String {
        let name = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...50).contains(name.count), !name.containsControlCharacters else {
            throw APIFailure(.invalidName, "The \(field) needs 1 to 50 characters, without control characters.")
        }
        return name
    }

    static func displayName(_ raw: String) throws(APIFailure) -> String {
        let name = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(name.count) else {
            throw APIFailure(.invalidDisplayName, "The display name needs 1 to 100 characters.")
        }
        guard !name.containsControlCharacters else {
            throw APIFailure(.invalidDisplayName, "The display name contains control characters.")
        }
        return name
    }
}

extension String {
    fileprivate var containsControlCharacters: Bool {
        unicodeScalars.contains {
            $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
        }
    }
}
