import Dispatch
import Foundation

/// What changed in observed sectioned results or in one section (RealmSwift's
/// `SectionedResultsChange`).
///
/// Deletions and modifications are index paths (`section`, `item`) as the previous
/// notification showed the sections, insertions index paths now, each sorted ascending.
/// A section whose key is gone is in `sectionsToDelete` (its previous index) and its rows are
/// not repeated as deletions; a new section is in `sectionsToInsert` (its index now) and its
/// rows are listed as insertions. An element that moved (to another section, or to another
/// row of its section) is a deletion and an insertion; a modified element that kept its row is
/// a modification.
public enum SectionedResultsChange<Collection> {
    /// The first notification: the sections as they are when the query first ran.
    case initial(Collection)
    /// A later notification with what changed since the previous one.
    case update(Collection, deletions: [IndexPath], insertions: [IndexPath], modifications: [IndexPath],
                sectionsToInsert: IndexSet, sectionsToDelete: IndexSet)
}

/// Old name of `SectionedResultsChange` (kept for RealmSwift compatibility).
public typealias RealmSectionedResultsChange = SectionedResultsChange

extension SectionsBase {
    /// Observes the sorted results and hands each change set over as sections: the sections
    /// read through the delivering Realm, the layout the previous notification showed (nil for
    /// the initial one), the layout now, and the change between them. The change comes from
    /// the results' change set (docs/ARCHITECTURE.md, Sectioned results), not from comparing
    /// the sections.
    func observe(keyPaths: [String]?, on queue: DispatchQueue?,
                 _ deliver: @escaping (SectionsBase, SectionLayout<Key>?, SectionLayout<Key>, SectionChange?) -> Void)
        -> NotificationToken {
        var paths = keyPaths
        if let given = keyPaths, !given.isEmpty {
            // a write to a sort property can move an element to another section without moving it
            // in the results: the watch must report it whatever the filter
            paths = given + sortKeyPaths.filter { $0 != "self" && !given.contains($0) }
        }
        let results = self.results
        let shown = ShownLayout<Key>()
        // a run loop's or an actor's observer reads these sections; a queue's, sections over
        // the results as the queue's Realm reads them (these hold the registering Realm)
        let same: SectionsBase? = queue == nil ? self : nil
        let (sortKeyPaths, keyOf, keyColumn, objectKeyOf) = (self.sortKeyPaths, self.keyOf, self.keyColumn, self.objectKeyOf)
        return Observation.register(results, paths: Observation.keyPaths(paths, root: results.info), queue: queue) {
            _, resolvedResults, p in
            let sections = same.flatMap { $0.results === resolvedResults ? $0 : nil }
                ?? SectionsBase(results: resolvedResults, sortKeyPaths: sortKeyPaths, keyOf: keyOf, keyColumn: keyColumn,
                                objectKeyOf: objectKeyOf)
            let now = sections.current()
            guard let before = shown.layout, !p.initial else {
                shown.layout = now
                deliver(sections, nil, now, nil)
                return
            }
            shown.layout = now
            deliver(sections, before, now, SectionChange(old: before, new: now, p))
        }
    }
}

/// The layout an observer's previous notification showed (read and written on its delivery
/// thread or queue only).
final class ShownLayout<Key: Hashable>: @unchecked Sendable {
    var layout: SectionLayout<Key>?
}

extension SectionedResults {
    /// Calls `block` with the sections now (`.initial`, asynchronously) and after every commit
    /// that changes them: elements deleted, inserted and modified as index paths, and sections
    /// deleted and inserted.
    ///
    /// - Parameters:
    ///   - keyPaths: the properties whose changes count as modifications, as for
    ///     `Results.observe(keyPaths:on:_:)`; a write that moves an element to another section
    ///     or row is always reported.
    ///   - queue: a serial queue to call `block` on; nil: the registering thread's run loop (the
    ///     Realm's queue for a Realm confined to one).
    /// - Returns: a token; notifications stop when it is invalidated or released.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (SectionedResultsChange<SectionedResults<Key, SectionElement>>) -> Void)
        -> NotificationToken {
        base.observe(keyPaths: keyPaths, on: queue) { sections, _, _, change in
            let value = SectionedResults(base: sections)
            guard let c = change else { return block(.initial(value)) }
            block(.update(value, deletions: c.deletions, insertions: c.insertions, modifications: c.modifications,
                          sectionsToInsert: c.sectionsToInsert, sectionsToDelete: c.sectionsToDelete))
        }
    }

    /// `observe(keyPaths:on:_:)` with Swift key paths (`\Contact.name`).
    public func observe(keyPaths: [PartialKeyPath<SectionElement>], on queue: DispatchQueue? = nil,
                        _ block: @escaping (SectionedResultsChange<SectionedResults<Key, SectionElement>>) -> Void)
        -> NotificationToken where SectionElement: ObjectBase {
        observe(keyPaths: Observation.names(keyPaths), on: queue, block)
    }

    /// The changes as an `AsyncSequence` (see `RealmChanges`); `keyPaths` as in
    /// `observe(keyPaths:on:_:)`.
    public func changes(keyPaths: [String]? = nil)
        -> RealmChanges<SectionedResultsChange<SectionedResults<Key, SectionElement>>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}

extension ResultsSection {
    /// Calls `block` with the section now (`.initial`, asynchronously) and after every commit
    /// that changes this section: its elements deleted, inserted or modified, or the section
    /// itself appearing or disappearing. Index paths and section indexes are those of the whole
    /// sectioned results. Commits that change only other sections do not call it.
    ///
    /// - Parameters:
    ///   - keyPaths: as for `SectionedResults.observe(keyPaths:on:_:)`.
    ///   - queue: a serial queue to call `block` on; nil: the registering thread's run loop (the
    ///     Realm's queue for a Realm confined to one).
    /// - Returns: a token; notifications stop when it is invalidated or released.
    public func observe(keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
                        _ block: @escaping (SectionedResultsChange<ResultsSection<Key, T>>) -> Void) -> NotificationToken {
        let key = self.key
        return base.observe(keyPaths: keyPaths, on: queue) { sections, before, now, change in
            let value = ResultsSection(base: sections, key: key)
            guard let change, let before else { return block(.initial(value)) }
            let c = change.only(oldSection: before.indexOfKey[key], newSection: now.indexOfKey[key])
            if c.isEmpty { return }
            block(.update(value, deletions: c.deletions, insertions: c.insertions, modifications: c.modifications,
                          sectionsToInsert: c.sectionsToInsert, sectionsToDelete: c.sectionsToDelete))
        }
    }

    /// `observe(keyPaths:on:_:)` with Swift key paths.
    public func observe(keyPaths: [PartialKeyPath<T>], on queue: DispatchQueue? = nil,
                        _ block: @escaping (SectionedResultsChange<ResultsSection<Key, T>>) -> Void) -> NotificationToken
        where T: ObjectBase {
        observe(keyPaths: Observation.names(keyPaths), on: queue, block)
    }

    /// The section's changes as an `AsyncSequence` (see `RealmChanges`).
    public func changes(keyPaths: [String]? = nil) -> RealmChanges<SectionedResultsChange<ResultsSection<Key, T>>> {
        RealmChanges { queue, deliver in observe(keyPaths: keyPaths, on: queue, deliver) }
    }
}

#if !canImport(UIKit) && !canImport(AppKit)
extension IndexPath {
    /// An index path of a row in a section (as UIKit and AppKit provide it): `[section, item]`.
    public init(item: Int, section: Int) {
        self.init(indexes: [section, item])
    }

    /// The section (the first index).
    public var section: Int {
        get { self[0] }
        set { self[0] = newValue }
    }

    /// The row in the section (the second index).
    public var item: Int {
        get { self[1] }
        set { self[1] = newValue }
    }
}
#endif
