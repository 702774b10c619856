import ConfidantCrypto
import Foundation

/// One group's changes as a member device holds them, and the state they make
/// (docs/PROTOCOL.md §10.3). Pure logic: the caller verifies each change's signature
/// (``GroupChange/verified(by:)``), stores what ``changes`` lists, and shows refusals.
///
/// Every device that holds the same changes computes the same state, whatever order they came in.
public struct GroupLedger: Sendable {
    /// The most changes one group has; after that, its members make a new group.
    public static let maximumChanges = 10_000
    /// The most changes held while the change they build on has not arrived.
    public static let maximumWaiting = 256

    /// What became of an inserted change.
    public enum Insertion: Sendable, Hashable {
        /// The ledger holds it already.
        case duplicate
        /// It builds on a change that has not arrived; it is placed when that one is.
        case waiting
        /// It can never be placed (see the reason).
        case rejected(GroupChangeRefusal)
        /// It is placed; ``outcome(of:)`` says whether it applies.
        case placed
    }

    /// Whether a change the ledger knows applies.
    public enum Outcome: Sendable, Hashable {
        case applied
        case refused(GroupChangeRefusal)
        case waiting
    }

    /// The group whose changes this ledger holds.
    public let groupID: UUID
    /// The current state; nil until the group's creation arrives.
    public internal(set) var state: GroupState?
    /// Changes whose ancestry reaches the creation.
    var placed: [GroupChangeDigest: GroupChange] = [:]
    /// Placed changes that do not apply.
    var refused: [GroupChangeDigest: GroupChangeRefusal] = [:]
    /// How many refused changes were valid where their authors made them (overruled, or built on
    /// an overruled one): while there are none and the state is one line of changes, a change on
    /// the head applies without resolving the whole group again.
    var validButRefused = 0
    /// When each user first became an admin (valid where made, applied or not): the earlier
    /// prevails.
    var ranks: [UUID: GroupChangePosition] = [:]
    private var rejected: [GroupChangeDigest: (change: GroupChange, reason: GroupChangeRefusal)] = [:]
    private var waiting: [GroupChangeDigest: [GroupChange]] = [:]
    private var waitingDigests: Set<GroupChangeDigest> = []

    /// An empty ledger for the group `groupID`.
    public init(groupID: UUID) { self.groupID = groupID }

    /// Takes a change; its outcome, and possibly others', may change.
    @discardableResult
    public mutating func insert(_ verified: VerifiedGroupChange) -> Insertion {
        let change = verified.change
        guard change.groupID == groupID else { return .rejected(.wrongGroup) }
        let digest = change.digest
        guard placed[digest] == nil, rejected[digest] == nil, !waitingDigests.contains(digest) else {
            return .duplicate
        }
        guard let parent = change.parent else {
            guard state == nil else { return reject(change, .secondCreation) }
            placed[digest] = change
            state = GroupState(creation: change)
            ranks = [change.author.userID: change.position]
            placeWaiting(on: digest)
            return .placed
        }
        if rejected[parent] != nil { return reject(change, .buildsOnRefused(parent)) }
        guard placed[parent] != nil else {
            guard waitingDigests.count < Self.maximumWaiting else { return .rejected(.tooManyWaiting) }
            waiting[parent, default: []].append(change)
            waitingDigests.insert(digest)
            return .waiting
        }
        return place(change)
    }

    /// What became of the change `digest`; nil if the ledger never took it.
    public func outcome(of digest: GroupChangeDigest) -> Outcome? {
        if placed[digest] != nil { return refused[digest].map(Outcome.refused) ?? .applied }
        if let entry = rejected[digest] { return .refused(entry.reason) }
        return waitingDigests.contains(digest) ? .waiting : nil
    }

    /// Every placed change, in the order they apply: what a device stores, and what a new member
    /// receives.
    public var changes: [GroupChange] { placed.values.sorted(by: GroupChange.appliesBefore) }

    /// Changes that will never apply, with the reason, in the order they apply.
    public var refusals: [(change: GroupChange, reason: GroupChangeRefusal)] {
        let placedRefusals = refused.compactMap { digest, reason in placed[digest].map { ($0, reason) } }
        return (placedRefusals + rejected.values.map { ($0.change, $0.reason) })
            .sorted { GroupChange.appliesBefore($0.0, $1.0) }
    }

    /// Makes and signs the next change by this device, building on the current head; throws the
    /// reason the members would refuse it.
    public func makeChange(
        _ action: GroupChange.Action, author: UUID, identity: PrivateIdentity, time: Date = Date()
    ) throws(GroupChangeMakingError) -> GroupChange {
        guard let state else { throw .noGroup }
        guard state.headNumber < UInt32.max, placed.count < Self.maximumChanges else {
            throw .refused(.tooManyChanges)
        }
        let change: GroupChange
        do {
            change = try GroupChange.make(
                groupID: groupID, number: state.headNumber + 1, parent: state.head, action: action, author: author,
                identity: identity, time: time)
        } catch {
            throw .format(error)
        }
        if let refusal = state.refusal(of: change, ranks: ranks) { throw .refused(refusal) }
        return change
    }

    private mutating func place(_ change: GroupChange) -> Insertion {
        guard let parentDigest = change.parent, let parent = placed[parentDigest] else { return .waiting }
        guard change.number == parent.number + 1 else { return reject(change, .badNumber) }
        guard placed.count < Self.maximumChanges else { return reject(change, .tooManyChanges) }
        placed[change.digest] = change
        if var state, parentDigest == state.head, state.version == Int(state.headNumber), validButRefused == 0 {
            // One line of changes ending at the parent: the author saw exactly this state.
            if let refusal = state.refusal(of: change, ranks: ranks) {
                refused[change.digest] = refusal
            } else {
                for user in state.apply(change) where ranks[user] == nil { ranks[user] = change.position }
                self.state = state
            }
        } else {
            resolve()
        }
        placeWaiting(on: change.digest)
        return .placed
    }

    private mutating func placeWaiting(on digest: GroupChangeDigest) {
        guard let children = waiting.removeValue(forKey: digest) else { return }
        for child in children {
            waitingDigests.remove(child.digest)
            _ = place(child)
        }
    }

    private mutating func reject(_ change: GroupChange, _ reason: GroupChangeRefusal) -> Insertion {
        rejected[change.digest] = (change, reason)
        for child in waiting.removeValue(forKey: change.digest) ?? [] {
            waitingDigests.remove(child.digest)
            _ = reject(child, .buildsOnRefused(change.digest))
        }
        return .rejected(reason)
    }
}

/// Why this device could not make a group change.
public enum GroupChangeMakingError: Error, Equatable, CustomStringConvertible {
    /// The group's creation has not arrived here.
    case noGroup
    /// The members would refuse it.
    case refused(GroupChangeRefusal)
    /// The change does not fit the format.
    case format(GroupChangeError)

    public var description: String {
        switch self {
        case .noGroup: "this device does not know the group yet"
        case .refused(let reason): "the group would refuse this change: \(reason)"
        case .format(let error): error.description
        }
    }
}

extension GroupChange {
    /// The order changes apply in: by number, then by digest.
    static func appliesBefore(_ lhs: GroupChange, _ rhs: GroupChange) -> Bool { lhs.position < rhs.position }
}
