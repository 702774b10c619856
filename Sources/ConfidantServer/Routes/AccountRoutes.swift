import ConfidantAPI
import ConfidantAuth
import ConfidantCrypto
import Fluent
import Foundation
import OpenAPIRuntime
import Vapor

extension RelayAPI {
    func signUp(_ input: Operations.SignUp.Input) async throws -> Operations.SignUp.Output {
        let request = try RequestContextMiddleware.request()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let email = try Self.email(body.email)
        let firstName = try body.firstName.map { try Self.personalName($0, "first name") }
        let lastName = try body.lastName.map { try Self.personalName($0, "last name") }
        guard let shown = body.displayName ?? [firstName, lastName].compactMap({ $0 }).joined(separator: " ").nilIfEmpty else {
            throw APIFailure(.invalidDisplayName, "Give a first and last name, or a display name.")
        }
        let displayName = try Self.displayName(shown)
        let throttle = Throttle(policy: context.configuration.signInPolicy, freeFailures: context.configuration.freeSignUpsPerAddress)
        // Per address (bulk account creation) and per e-mail address (probing which are taken).
        let keys = ["sign-up/address/\(context.clientAddress(request))", "sign-up/account/\(email)"]
        try await throttle.check(keys, on: request.db)
        // Every attempt counts, successful or not.
        try await context.write(request.db) { db in try await throttle.recordFailure(keys, on: db) }

        try context.passwords.check(body.password, email: email)
        var avatar: (Data, String)?
        if let image = body.avatar {
            avatar = try Self.checkedImage(Data(image.data), declared: nil, limit: context.configuration.maximumAvatarBytes)
        }
        if try await UserRecord.query(on: request.db).filter(\.$email == email).first() != nil {
            throw APIFailure(.emailTaken, "An account with this e-mail address exists; sign in instead.")
        }
        let hash = try await context.passwords.hash(body.password, on: request.application.threadPool)
        let user = UserRecord(email: email, displayName: displayName, passwordHash: hash)
        user.firstName = firstName
        user.lastName = lastName
        user.avatar = avatar?.0
        user.avatarType = avatar?.1
        do {
            try await context.write(request.db) { db in try await user.create(on: db) }
        } catch let error as any DatabaseError where error.isConstraintFailure {
            throw APIFailure(.emailTaken, "An account with this e-mail address exists; sign in instead.")
        }
        return .created(.init(body: .json(try Self.userBody(user))))
    }

    func signIn(_ input: Operations.SignIn.Input) async throws -> Operations.SignIn.Output {
        let request = try RequestContextMiddleware.request()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        let email = try Self.email(body.email)
        let identity: PublicIdentity
        do {
            identity = try PublicIdentity(serialized: body.identity.data)
        } catch {
            throw APIFailure(.invalidIdentity, "The device identity is not a valid, self-signed public identity: \(error).")
        }
        let throttle = Throttle(policy: context.configuration.signInPolicy)
        let accountKey = "sign-in/account/\(email)"
        let keys = [accountKey, "sign-in/address/\(context.clientAddress(request))"]
        try await throttle.check(keys, on: request.db)

        let user = try await UserRecord.query(on: request.db).filter(\.$email == email).first()
        let pool = request.application.threadPool
        let verified = try await context.passwords.verify(body.password, against: user?.passwordHash ?? PasswordPolicy.decoyHash, on: pool)
        guard verified, let user, user.id != nil else {
            try await context.write(request.db) { db in try await throttle.recordFailure(keys, on: db) }
            throw APIFailure(.invalidCredentials, "The e-mail address or the password is wrong.")
        }

        if try await decideSteps(for: user, identity: identity, address: context.clientAddress(request), on: request.db) != [.password] {
            // The password is right, but this sign-in needs more: the account's chain, or the
            // e-mail code for a new device or address.
            try await context.write(request.db) { db in try await throttle.reset([accountKey], on: db) }
            throw APIFailure(.stepUpRequired, "This sign-in needs more than the password (a chain, or a new device or address); use POST /v1/auth/sign-in (`confidant login` does).")
        }
        let session = try await openSession(for: user, identity: identity, request: request, resetting: [accountKey], throttle: throttle)
        return .created(.init(body: .json(session)))
    }

    /// Registers the device (announcing a new or replaced key) and creates a session.
    func openSession(for user: UserRecord, identity: PublicIdentity, request: Request, resetting keys: [String],
                     throttle: Throttle) async throws -> Components.Schemas.Session {
        let userID = try user.requireID()
        let token = SessionToken.generate()
        let now = Date()
        let expires = now.addingTimeInterval(context.configuration.sessionLifetime)
        let identityBytes = identity.serialized
        let deviceID = identity.deviceID
        let address = context.clientAddress(request)
        let context = self.context
        let replaced = try await context.write(request.db) { db, publication -> Bool in
            try await throttle.reset(keys, on: db)
            let current = try await DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$deviceID == deviceID)
                .filter(\.$retiredAt == nil).first()
            var change: Components.Schemas.KeyChange.ChangePayload?
            if let current, current.identity != identityBytes {
                current.retiredAt = now
                try await current.update(on: db)
                change = .replaced
            } else if current == nil {
                change = .added
            }
            if let change {
                try await DeviceRecord(userID: userID, deviceID: deviceID, identity: identityBytes, registeredAt: now).create(on: db)
                try await Self.announceKeyChange(change, userID: userID, deviceID: deviceID, identity: identityBytes, context: context,
                                                 publishing: publication, on: db, now: now)
            }
            try await SessionRecord(userID: userID, deviceID: deviceID, tokenHash: token.hash, createdAt: now, expiresAt: expires).create(on: db)
            if let known = try await SignInAddressRecord.query(on: db).filter(\.$userID == userID).filter(\.$address == address).first() {
                known.lastSeen = now
                try await known.update(on: db)
            } else {
                try await SignInAddressRecord(userID: userID, address: address, lastSeen: now).create(on: db)
            }
            return change == .replaced
        }
        return .init(token: token.text, expiresAt: expires, user: try Self.userBody(user), deviceId: deviceID.canonicalString, keyChanged: replaced)
    }

    func signOut(_ input: Operations.SignOut.Input) async throws -> Operations.SignOut.Output {
        let (request, caller) = try await signedIn()
        try await context.write(request.db) { db in
            try await SessionRecord.query(on: db).filter(\.$id == caller.sessionID).set(\.$revokedAt, to: Date()).update()
        }
        context.sessions.evict(userID: caller.userID, deviceID: caller.deviceID)
        return .noContent(.init())
    }

    func currentAccount(_ input: Operations.CurrentAccount.Input) async throws -> Operations.CurrentAccount.Output {
        let (request, caller) = try await signedIn()
        guard let user = try await UserRecord.find(caller.userID, on: request.db),
              let session = try await SessionRecord.find(caller.sessionID, on: request.db)
        else { throw APIFailure.unauthenticated }
        return .ok(.init(body: .json(.init(user: try Self.userBody(user), deviceId: caller.deviceID.canonicalString,
                                           sessionExpiresAt: session.expiresAt))))
    }

    func deleteAccount(_ input: Operations.DeleteAccount.Input) async throws -> Operations.DeleteAccount.Output {
        let (request, caller) = try await signedIn()
        guard case .json(let body) = input.body else { throw APIFailure.malformed("Send JSON.") }
        _ = try await confirmPassword(body.password, of: caller, request: request, otherwise: "the account was not deleted")
        let userID = caller.userID
        let now = Date()
        let blobs = try await context.write(request.db) { db, publication -> [UUID] in
            for device in try await DeviceRecord.query(on: db).filter(\.$userID == userID).filter(\.$retiredAt == nil).all() {
                try await Self.announceKeyChange(.removed, userID: userID, deviceID: device.deviceID, identity: nil, context: context,
                                                 publishing: publication, on: db, now: now)
            }
            let blobs = try await BlobRecord.query(on: db).filter(\.$ownerID == userID).all().compactMap(\.id)
            try await BlobGrantRecord.query(on: db).filter(\.$blobID ~~ blobs).delete()
            try await BlobRecord.query(on: db).filter(\.$ownerID == userID).delete()
            try await BlobGrantRecord.query(on: db).filter(\.$recipientID == userID).delete()
            try await MailboxRecord.query(on: db).filter(\.$recipientUserID == userID).delete()
            publication.withdraw(user: userID)
            try await ConversationRecord.query(on: db).group(.or) { $0.filter(\.$ownerID == userID).filter(\.$peerID == userID) }.delete()
            try await PostedMessageRecord.query(on: db).filter(\.$senderUserID == userID).delete()
            try await SessionRecord.query(on: db).filter(\.$userID == userID).delete()
            try await DeviceRecord.query(on: db).filter(\.$userID == userID).delete()
            try await UserRecord.query(on: db).filter(\.$id == userID).delete()
            return blobs
        }
        context.sessions.evict(userID: userID)
        for blob in blobs { try? FileManager.default.removeItem(at: context.blobDirectory.appendingPathComponent(blob.canonicalString)) }
        return .noContent(.init())
    }

    func setAvatar(_ input: Operations.SetAvatar.Input) async throws -> Operations.SetAvatar.Output {
        let (request, caller) = try await signedIn()
        let limit = context.configuration.maximumAvatarBytes
        let (body, declared): (HTTPBody, String) = switch input.body {
        case .png(let body): (body, "image/png")
        case .jpeg(let body): (body, "image/jpeg")
        }
        let bytes: Data
        do { bytes = try await Data(collecting: body, upTo: limit) } catch { throw APIFailure.tooLarge("The avatar", limit: limit) }
        let (image, type) = try Self.checkedImage(bytes, declared: declared, limit: limit)
        try await context.write(request.db) { db in
            try await UserRecord.query(on: db).filter(\.$id == caller.userID).set(\.$avatar, to: image).set(\.$avatarType, to: type).update()
        }
        return .noContent(.init())
    }

    func getAvatar(_ input: Operations.GetAvatar.Input) async throws -> Operations.GetAvatar.Output {
        let (request, _) = try await signedIn()
        let userID = try Self.uuid(input.path.userId, "userId")
        guard let user = try await UserRecord.find(userID, on: request.db), let avatar = user.avatar else {
            throw APIFailure.notFound("That avatar")
        }
        let body = HTTPBody([UInt8](avatar))
        return .ok(.init(body: user.avatarType == "image/jpeg" ? .jpeg(body) : .png(body)))
    }

    // MARK: - Checks

    static func email(_ raw: String) throws(APIFailure) -> String {
        do { return try EmailAddress(raw).value } catch { throw APIFailure(.invalidEmail, error.description) }
    }

    /// Checks the signed-in caller's password again before a sensitive change, under the same
    /// throttle as sign-in. `otherwise` says what did not happen.
    func confirmPassword(_ password: String, of caller: Caller, request: Request, otherwise: String) async throws -> UserRecord {
        guard let user = try await UserRecord.find(caller.userID, on: request.db) else { throw APIFailure.unauthenticated }
        let throttle = Throttle(policy: context.configuration.signInPolicy)
        let keys = ["sign-in/account/\(user.email)"]
        try await throttle.check(keys, on: request.db)
        guard try await context.passwords.verify(password, against: user.passwordHash, on: request.application.threadPool) else {
            try await context.write(request.db) { db in try await throttle.recordFailure(keys, on: db) }
            throw APIFailure(.invalidCredentials, "The password is wrong; \(otherwise).")
        }
        return user
    }

    static func personalName(_ raw: String, _ field: String) throws(APIFailure) -> String {
        let name = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...50).contains(name.count),
              !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }) else {
            throw APIFailure(.invalidName, "The \(field) needs 1 to 50 characters, without control characters.")
        }
        return name
    }

    static func displayName(_ raw: String) throws(APIFailure) -> String {
        let name = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard (1...100).contains(name.count) else {
            throw APIFailure(.invalidDisplayName, "The display name needs 1 to 100 characters.")
        }
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control || $0.properties.generalCategory == .format }) else {
            throw APIFailure(.invalidDisplayName, "The display name contains control characters.")
        }
        return name
    }

    /// A PNG or JPEG judged by its bytes, not by what the client says it is.
    static func checkedImage(_ bytes: Data, declared: String?, limit: Int) throws(APIFailure) -> (Data, String) {
        guard bytes.count <= limit else { throw APIFailure.tooLarge("The avatar", limit: limit) }
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        let type: String
        if bytes.count > 24, bytes.prefix(8).elementsEqual(png) {
            type = "image/png"
        } else if bytes.count > 4, bytes.prefix(3).elementsEqual([0xFF, 0xD8, 0xFF]), bytes.suffix(2).elementsEqual([0xFF, 0xD9]) {
            type = "image/jpeg"
        } else {
            throw APIFailure(.unsupportedImage, "The avatar must be a PNG or JPEG image; these bytes are neither.")
        }
        if let declared, declared != type {
            throw APIFailure(.unsupportedImage, "The body is \(type) but was sent as \(declared).")
        }
        return (bytes, type)
    }
}

extension String {
    fileprivate var nilIfEmpty: String? { isEmpty ? nil : self }
}
