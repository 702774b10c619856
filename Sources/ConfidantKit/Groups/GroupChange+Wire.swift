import ConfidantCrypto
import Foundation

/// The byte layout of a group change (docs/PROTOCOL.md §10.2):
///
/// ```
/// u8 version = 1 | 16 group id | 16 change id | u32 number | 32 parent digest (zeros: none)
/// | 16 author user | 16 author device | u64 time (ms) | u8 action | u16 body length | body
/// | 64 Ed25519 signature over "Confidant group change v1\0" ‖ every byte before it
/// ```
extension GroupChange {
    /// The change format version.
    public static let version: UInt8 = 1
    static let signatureContext = Array("Confidant group change v1\u{0}".utf8)
    static let signatureCount = 64
    static let fixedCount = 1 + 16 + 16 + 4 + 32 + 16 + 16 + 8 + 1 + 2
    /// The largest change: a creation naming 999 members besides its author, with the longest name.
    public static let maximumBytes = fixedCount + 1 + maximumNameBytes + 2 + 16 * maximumMembers + signatureCount

    static func signedBytes(
        groupID: UUID, changeID: UUID, number: UInt32, parent: GroupChangeDigest?, author: DeviceAddress,
        timeMilliseconds: UInt64, action: Action
    ) throws(GroupChangeError) -> [UInt8] {
        let body = try encode(action)
        var out: [UInt8] = [version]
        out.reserveCapacity(fixedCount + body.count)
        out.append(groupID)
        out.append(changeID)
        out.appendBigEndian(number)
        out += parent?.bytes ?? [UInt8](repeating: 0, count: 32)
        out.append(author.userID)
        out.append(author.deviceID)
        out.appendBigEndian(timeMilliseconds)
        out.append(action.code)
        out.appendBigEndian(UInt16(body.count))
        out += body
        return out
    }

    /// Reads a change; ``verified(by:)`` checks its signature.
    public init(serialized data: Data) throws(GroupChangeError) {
        guard data.count <= Self.maximumBytes else { throw .malformed("\(data.count) bytes") }
        var reader = ByteReader(data, truncated: GroupChangeError.malformed("truncated"))
        let version = try reader.readUInt8()
        guard version == Self.version else { throw .unsupportedVersion(version) }
        let groupID = try reader.readUUID()
        let changeID = try reader.readUUID()
        let number = try reader.readUInt32()
        let parentBytes = try reader.read(32)
        let parent = parentBytes.allSatisfy { $0 == 0 } ? nil : GroupChangeDigest(parentBytes)
        let author = DeviceAddress(userID: try reader.readUUID(), deviceID: try reader.readUUID())
        let time = try reader.readUInt64()
        let code = try reader.readUInt8()
        let length = Int(try reader.readUInt16())
        let body = try reader.read(length)
        let signature = try reader.readData(Self.signatureCount)
        guard reader.isAtEnd else { throw .malformed("bytes after the signature") }
        let action = try Self.decode(code: code, body: body, author: author.userID)
        switch (action, number, parent) {
        case (.create, 1, nil): break
        case (.create, _, _): throw .malformed("a creation must be number 1 with no parent")
        case (_, 2..., .some): break
        default: throw .malformed("a change after the creation needs a parent and a number above 1")
        }
        self.init(
            groupID: groupID, changeID: changeID, number: number, parent: parent, author: author,
            timeMilliseconds: time, action: action, signature: signature, serialized: data)
    }

    private static func encode(_ action: Action) throws(GroupChangeError) -> [UInt8] {
        var out: [UInt8] = []
        switch action {
        case .create(let name, let members):
            out += try encode(name: name)
            try append(users: members, to: &out, allowEmpty: true)
        case .add(let users), .remove(let users): try append(users: users, to: &out, allowEmpty: false)
        case .leave: break
        case .promote(let user), .demote(let user): out.append(user)
        case .rename(let name): out += try encode(name: name)
        case .picture(let digest):
            guard digest == nil || digest?.count == 32 else { throw .malformed("a picture digest is 32 bytes") }
            out += digest ?? Data()
        case .timer(let seconds):
            guard isValid(timer: seconds) else { throw .malformed("a timer of \(seconds) seconds") }
            out.appendBigEndian(UInt32(seconds))
        }
        return out
    }

    private static func encode(name: String) throws(GroupChangeError) -> [UInt8] {
        let bytes = Array(name.utf8)
        guard isValid(name: name) else {
            throw .malformed(
                "a group name is 1…\(maximumNameBytes) bytes of text, not only white space, without control characters")
        }
        return [UInt8(bytes.count)] + bytes
    }

    private static func append(users: [UUID], to out: inout [UInt8], allowEmpty: Bool) throws(GroupChangeError) {
        guard users.count <= maximumMembers, allowEmpty || !users.isEmpty, Set(users).count == users.count else {
            throw .malformed("a change names 1…\(maximumMembers) different users")
        }
        out.appendBigEndian(UInt16(users.count))
        for user in users { out.append(user) }
    }

    private static func decode(code: UInt8, body: [UInt8], author: UUID) throws(GroupChangeError) -> Action {
        var reader = ByteReader(body, truncated: GroupChangeError.malformed("truncated action"))
        let action: Action
        switch code {
        case 1:
            let name = try readName(&reader)
            let members = try readUsers(&reader, allowEmpty: true)
            guard !members.contains(author), members.count < maximumMembers else {
                throw .malformed("a creation lists up to \(maximumMembers - 1) members besides its author")
            }
            action = .create(name: name, members: members)
        case 2: action = .add(try readUsers(&reader, allowEmpty: false))
        case 3: action = .remove(try readUsers(&reader, allowEmpty: false))
        case 4: action = .leave
        case 5: action = .promote(try reader.readUUID())
        case 6: action = .demote(try reader.readUUID())
        case 7: action = .rename(try readName(&reader))
        case 8:
            guard body.isEmpty || body.count == 32 else { throw .malformed("a picture digest is 32 bytes") }
            action = .picture(body.isEmpty ? nil : Data(reader.readRest()))
        case 9:
            let seconds = Int(try reader.readUInt32())
            guard isValid(timer: seconds) else { throw .malformed("a timer of \(seconds) seconds") }
            action = .timer(seconds: seconds)
        default: throw .unknownAction(code)
        }
        guard reader.isAtEnd else { throw .malformed("bytes after the action") }
        return action
    }

    private static func readName(_ reader: inout ByteReader<GroupChangeError>) throws(GroupChangeError) -> String {
        let count = Int(try reader.readUInt8())
        let bytes = try reader.read(count)
        guard let name = String(validating: bytes, as: UTF8.self), isValid(name: name) else {
            throw .malformed("a group name is 1…\(maximumNameBytes) bytes of text")
        }
        return name
    }

    private static func readUsers(
        _ reader: inout ByteReader<GroupChangeError>, allowEmpty: Bool
    ) throws(GroupChangeError) -> [UUID] {
        let count = Int(try reader.readUInt16())
        guard count <= maximumMembers, allowEmpty || count > 0 else {
            throw .malformed("a change names 1…\(maximumMembers) users")
        }
        var users: [UUID] = []
        users.reserveCapacity(count)
        for _ in 0..<count { users.append(try reader.readUUID()) }
        guard Set(users).count == users.count else { throw .malformed("a user named twice") }
        return users
    }

    /// 1…128 UTF-8 bytes, not only white space, no control characters.
    static func isValid(name: String) -> Bool {
        let count = name.utf8.count
        return count >= 1 && count <= maximumNameBytes
            && !name.allSatisfy(\.isWhitespace)
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    static func isValid(timer seconds: Int) -> Bool {
        seconds == 0 || (5...maximumTimerSeconds).contains(seconds)
    }
}

extension GroupChange.Action {
    /// The action's byte in the change's layout.
    var code: UInt8 {
        switch self {
        case .create: 1
        case .add: 2
        case .remove: 3
        case .leave: 4
        case .promote: 5
        case .demote: 6
        case .rename: 7
        case .picture: 8
        case .timer: 9
        }
    }
}
