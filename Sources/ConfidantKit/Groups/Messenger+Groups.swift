import ConfidantCrypto
import Foundation

/// Groups: making them and changing who is in them (docs/PROTOCOL.md §10). Each change is signed
/// by this device, stored, and sent to every member's devices (and the account's others) over
/// the pairwise sessions as payload kind 7; a member added gets the group's whole history, so
/// their device computes the same state as everyone's.
extension Messenger {
    /// Makes a group named `name` with `members` besides this account, which is its first admin.
    /// - Throws: `GroupChangeMakingError` for a name or member list the format refuses.
    @discardableResult
    public func createGroup(name: String, members: [Contact]) async throws -> GroupState {
        for contact in members { try store.saveContact(contact) }
        let groupID = UUID()
        let change: GroupChange
        do {
            change = try GroupChange.make(
                groupID: groupID, number: 1, parent: nil, action: .create(name: name, members: members.map(\.id)),
                author: me, identity: identity, time: now())
        } catch {
            throw GroupChangeMakingError.format(error)
        }
        return try await commit(change, to: GroupLedger(groupID: groupID))
    }

    /// Adds users to the group (an admin's change); they receive its history.
    @discardableResult
    public func addToGroup(_ groupID: UUID, _ contacts: [Contact]) async throws -> GroupState {
        for contact in contacts { try store.saveContact(contact) }
        return try await change(groupID, .add(contacts.map(\.id)))
    }

    /// Removes members (an admin's change); they are told, and get nothing the group sends after.
    @discardableResult
    public func removeFromGroup(_ groupID: UUID, _ users: [UUID]) async throws -> GroupState {
        try await change(groupID, .remove(users))
    }

    /// Leaves the group. When the last admin leaves, the longest-standing member becomes one.
    @discardableResult
    public func leaveGroup(_ groupID: UUID) async throws -> GroupState { try await change(groupID, .leave) }

    /// Names the group (an admin's change).
    @discardableResult
    public func renameGroup(_ groupID: UUID, to name: String) async throws -> GroupState {
        try await change(groupID, .rename(name))
    }

    /// Makes a member an admin, or (`admin: false`) an admin a member only (an admin's change).
    @discardableResult
    public func setGroupAdmin(_ groupID: UUID, _ user: UUID, admin: Bool) async throws -> GroupState {
        try await change(groupID, admin ? .promote(user) : .demote(user))
    }

    /// Sets the group's disappearing timer (nil turns it off; an admin's change): every member's
    /// device deletes a group message that long after it got it, as the group's state there says
    /// when the message arrives.
    /// - Throws: `ConfidantKitError.invalidTimer` outside 5 seconds to 4 weeks.
    @discardableResult
    public func setGroupTimer(_ groupID: UUID, seconds: Int?) async throws -> GroupState {
        if let seconds, !DisappearingTimer.accepts(seconds) { throw ConfidantKitError.invalidTimer(seconds) }
        return try await change(groupID, .timer(seconds: seconds ?? 0))
    }

    /// The groups this device knows, by name.
    public func groups() throws -> [GroupState] {
        try store.groupIDs().compactMap { try store.groupLedger($0)?.state }.sorted {
            $0.name.localizedStandardCompare($1.name) == .orderedAscending
        }
    }

    /// One group's state and the changes its members refused, with why.
    public func group(_ groupID: UUID) throws -> GroupDetails {
        guard let ledger = try store.groupLedger(groupID), let state = ledger.state else {
            throw ConfidantKitError.unknownGroup(groupID)
        }
        return GroupDetails(
            state: state,
            refused: ledger.refusals.map { GroupDetails.Refusal(author: $0.change.author.userID, reason: $0.reason) })
    }

    private func change(_ groupID: UUID, _ action: GroupChange.Action) async throws -> GroupState {
        guard let ledger = try store.groupLedger(groupID) else { throw ConfidantKitError.unknownGroup(groupID) }
        return try await commit(try ledger.makeChange(action, author: me, identity: identity, time: now()), to: ledger)
    }

    /// Stores the change, queues it for every member before and after it (a removed member
    /// learns of the removal) and the full history for those it adds, and sends.
    private func commit(_ change: GroupChange, to ledger: GroupLedger) async throws -> GroupState {
        var after = ledger
        guard case .placed = after.insert(try change.verified(by: identity.publicIdentity)),
            after.outcome(of: change.digest) == .applied, let state = after.state
        else { throw GroupChangeMakingError.refused(after.outcome(of: change.digest).refusal ?? .badNumber) }
        let before = Set(ledger.state?.members ?? [])
        let joined = Set(state.members).subtracting(before)
        let recipients = before.union(state.members).subtracting([me]).sorted()
        let history = ChatPayload.groupChangeBatches(after.changes.map(\.serialized))
        let now = now()
        try store.write { db in
            try store.storeOwnGroupChange(change, now: now, db)
            for peer in recipients {
                let batches = joined.contains(peer) ? history : [[change.serialized]]
                for batch in batches {
                    try store.queueControl(
                        ChatPayload(conversation: change.groupID, content: .groupChanges(batch)), to: peer, now: now,
                        db)
                }
            }
        }
        eventHub.emit(.changed)
        try await sender.deliverOutbox()
        return state
    }
}

/// A group as this device holds it: its state, and the changes its members refused.
public struct GroupDetails: Sendable, Hashable {
    /// A change that does not apply.
    public struct Refusal: Sendable, Hashable {
        /// Who made it.
        public let author: UUID
        /// Why it does not apply.
        public let reason: GroupChangeRefusal
    }

    /// Name, members, admins, version.
    public let state: GroupState
    /// Refused changes, in the order they would have applied.
    public let refused: [Refusal]
}

extension Optional where Wrapped == GroupLedger.Outcome {
    fileprivate var refusal: GroupChangeRefusal? {
        if case .refused(let reason)? = self { return reason }
        return nil
    }
}
