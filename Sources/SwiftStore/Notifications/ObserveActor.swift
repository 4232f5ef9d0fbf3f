import Foundation

/// The actor forms of `observe` (docs/ARCHITECTURE.md, Change notifications, "Delivery on an
/// actor"): the observed value is handed to the actor through a `ThreadSafeReference`, resolved
/// in the actor's own actor-isolated Realm (`Realm(configuration:actor:)`'s cached instance),
/// and observed there with the plain form, which an actor-isolated Realm delivers on its actor.
/// The block then runs isolated to the actor with the value as that Realm reads it. There is
/// one change-set path: the same watches and the same notifier serve every form.
enum ActorObservation {
    /// Checks `value` on the calling side and hands it over to `actor`, where `register`
    /// observes the resolved value; an empty token when the value was deleted before it got
    /// there or the calling task was cancelled.
    static func register<A: Actor, V: ThreadConfined>(
        _ value: V, on actor: A, isolation: isolated (any Actor)?,
        _ register: @escaping (V) -> NotificationToken
    ) async -> NotificationToken {
        guard let realm = value.realm else {
            preconditionFailure("Only collections which are managed by a Realm support change notifications")
        }
        Observation.checkNotFrozen(realm.core)
        realm.core.verifyThread()
        if realm.core.isInWriteTransaction {
            preconditionFailure("Cannot register notification blocks from within write transactions.")
        }
        let reference = ThreadSafeReference(to: value)
        let config = realm.configuration
        // `register` captures only Sendable values (the key paths, the actor, the @Sendable
        // block) and the observed type's generic metadata, which Swift 6 does not count as
        // Sendable; it runs once, on the actor
        return await resolve(reference, config: config, on: actor, UncheckedSendable(value: register))
    }

    /// On `actor`: `reference` resolved in the actor's Realm, observed by `register`.
    private static func resolve<A: Actor, V: ThreadConfined>(
        _ reference: ThreadSafeReference<V>, config: Realm.Configuration, on actor: isolated A,
        _ register: UncheckedSendable<(V) -> NotificationToken>
    ) -> NotificationToken {
        if Task.isCancelled { return NotificationToken() }
        let core: RealmCore
        do {
            core = try RealmCore.open(config, actor: actor)
        } catch {
            preconditionFailure("Cannot open the Realm on the actor to deliver notifications there: \(error)")
        }
        guard let resolved = Realm(core: core).resolve(reference) else { return NotificationToken() }
        return register.value(resolved)
    }

    /// Calls `block` with `actor` isolated (the caller runs on the actor's executor: a delivery
    /// to the actor's Realm; checked at run time).
    static func call<A: Actor, C>(_ actor: A, _ change: C, _ block: @Sendable (isolated A, C) -> Void) {
        let handed = UncheckedSendable(value: change)
        actor.assumeIsolated { a in block(a, handed.value) }
    }
}

// MARK: - Collections

extension Results {
    /// Calls `block` isolated to `actor` with the results now (`.initial`, asynchronously) and
    /// after every commit that changes them. The results passed to `block` are read through the
    /// actor's actor-isolated Realm and may be used only on the actor. `keyPaths` filter as in
    /// `observe(keyPaths:on:_:)`. Returns once the observer is registered on the actor; the
    /// token stops it (from any thread or task).
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<Results<Element>>) -> Void
    ) async -> NotificationToken {
        await ActorObservation.register(self, on: actor, isolation: _isolation) { r in
            r.observe(keyPaths: keyPaths, on: nil) { ActorObservation.call(actor, $0, block) }
        }
    }

    /// `observe(keyPaths:on:_isolation:_:)` with Swift key paths (`\Dog.name`).
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Element>], on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<Results<Element>>) -> Void
    ) async -> NotificationToken where Element: ObjectBase {
        await observe(keyPaths: Observation.names(keyPaths), on: actor, _isolation: _isolation, block)
    }
}

extension List {
    /// The actor form of `observe(keyPaths:on:_:)`: see
    /// `Results.observe(keyPaths:on:_isolation:_:)`.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<List<Element>>) -> Void
    ) async -> NotificationToken {
        await ActorObservation.register(self, on: actor, isolation: _isolation) { l in
            l.observe(keyPaths: keyPaths, on: nil) { ActorObservation.call(actor, $0, block) }
        }
    }

    /// The actor form with Swift key paths.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Element>], on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<List<Element>>) -> Void
    ) async -> NotificationToken where Element: ObjectBase {
        await observe(keyPaths: Observation.names(keyPaths), on: actor, _isolation: _isolation, block)
    }
}

extension MutableSet {
    /// The actor form of `observe(keyPaths:on:_:)`: see
    /// `Results.observe(keyPaths:on:_isolation:_:)`.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<MutableSet<Element>>) -> Void
    ) async -> NotificationToken {
        await ActorObservation.register(self, on: actor, isolation: _isolation) { s in
            s.observe(keyPaths: keyPaths, on: nil) { ActorObservation.call(actor, $0, block) }
        }
    }

    /// The actor form with Swift key paths.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Element>], on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<MutableSet<Element>>) -> Void
    ) async -> NotificationToken where Element: ObjectBase {
        await observe(keyPaths: Observation.names(keyPaths), on: actor, _isolation: _isolation, block)
    }
}

extension LinkingObjects {
    /// The actor form of `observe(keyPaths:on:_:)`: see
    /// `Results.observe(keyPaths:on:_isolation:_:)`.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<LinkingObjects<Element>>) -> Void
    ) async -> NotificationToken {
        await ActorObservation.register(self, on: actor, isolation: _isolation) { l in
            l.observe(keyPaths: keyPaths, on: nil) { ActorObservation.call(actor, $0, block) }
        }
    }

    /// The actor form with Swift key paths.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Element>], on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<LinkingObjects<Element>>) -> Void
    ) async -> NotificationToken {
        await observe(keyPaths: Observation.names(keyPaths), on: actor, _isolation: _isolation, block)
    }
}

extension AnyRealmCollection {
    /// The actor form of `observe(keyPaths:on:_:)`: see
    /// `Results.observe(keyPaths:on:_isolation:_:)`.
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<AnyRealmCollection<Element>>) -> Void
    ) async -> NotificationToken {
        await ActorObservation.register(self, on: actor, isolation: _isolation) { c in
            c.observe(keyPaths: keyPaths, on: nil) { ActorObservation.call(actor, $0, block) }
        }
    }

    /// The actor form with Swift key paths.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<Element>], on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmCollectionChange<AnyRealmCollection<Element>>) -> Void
    ) async -> NotificationToken where Element: ObjectBase {
        await observe(keyPaths: Observation.names(keyPaths), on: actor, _isolation: _isolation, block)
    }
}

extension Map {
    /// The actor form of `observe(keyPaths:on:_:)`: `block` runs isolated to `actor` with the
    /// map read through the actor's Realm (see `Results.observe(keyPaths:on:_isolation:_:)`).
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, RealmMapChange<Map<Key, Value>>) -> Void
    ) async -> NotificationToken {
        await ActorObservation.register(self, on: actor, isolation: _isolation) { m in
            m.observe(keyPaths: keyPaths, on: nil) { ActorObservation.call(actor, $0, block) }
        }
    }
}

// MARK: - Sections

/// What hands sections to an actor: their results go through a `ThreadSafeReference` and the
/// key block goes with them (it is called on the actor, as RealmSwift does).
private struct SectionsHandOver<Key: _Persistable & Hashable, Element: RealmCollectionValue>: @unchecked Sendable {
    let sortKeyPaths: [String]
    let keyOf: (Element) -> Key
    let keyColumn: (name: String, read: (ObjectBase, UInt32) -> Key)?
    let objectKeyOf: ((ObjectBase) -> Key)?

    init(_ base: SectionsBase<Key, Element>) {
        sortKeyPaths = base.sortKeyPaths
        keyOf = base.keyOf
        keyColumn = base.keyColumn
        objectKeyOf = base.objectKeyOf
    }

    func sections(_ results: Results<Element>) -> SectionsBase<Key, Element> {
        SectionsBase(results: results.base, sortKeyPaths: sortKeyPaths, keyOf: keyOf, keyColumn: keyColumn,
                     objectKeyOf: objectKeyOf)
    }
}

extension SectionedResults {
    /// The actor form of `observe(keyPaths:on:_:)`: `block` runs isolated to `actor` with the
    /// sections read through the actor's Realm (see `Results.observe(keyPaths:on:_isolation:_:)`).
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, SectionedResultsChange<SectionedResults<Key, SectionElement>>) -> Void
    ) async -> NotificationToken {
        let handOver = SectionsHandOver(base)
        return await ActorObservation.register(Results<SectionElement>(base: base.results), on: actor,
                                               isolation: _isolation) { r in
            SectionedResults(base: handOver.sections(r)).observe(keyPaths: keyPaths, on: nil) {
                ActorObservation.call(actor, $0, block)
            }
        }
    }

    /// The actor form with Swift key paths.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<SectionElement>], on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, SectionedResultsChange<SectionedResults<Key, SectionElement>>) -> Void
    ) async -> NotificationToken where SectionElement: ObjectBase {
        await observe(keyPaths: Observation.names(keyPaths), on: actor, _isolation: _isolation, block)
    }
}

extension ResultsSection {
    /// The actor form of `observe(keyPaths:on:_:)`: `block` runs isolated to `actor` with the
    /// section read through the actor's Realm (see `Results.observe(keyPaths:on:_isolation:_:)`).
    public func observe<A: Actor>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, SectionedResultsChange<ResultsSection<Key, T>>) -> Void
    ) async -> NotificationToken {
        let handOver = SectionsHandOver(base)
        let key = UncheckedSendable(value: self.key)
        return await ActorObservation.register(Results<T>(base: base.results), on: actor, isolation: _isolation) { r in
            ResultsSection(base: handOver.sections(r), key: key.value).observe(keyPaths: keyPaths, on: nil) {
                ActorObservation.call(actor, $0, block)
            }
        }
    }

    /// The actor form with Swift key paths.
    public func observe<A: Actor>(
        keyPaths: [PartialKeyPath<T>], on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, SectionedResultsChange<ResultsSection<Key, T>>) -> Void
    ) async -> NotificationToken where T: ObjectBase {
        await observe(keyPaths: Observation.names(keyPaths), on: actor, _isolation: _isolation, block)
    }
}

// MARK: - Objects

extension Object {
    /// Calls `block` isolated to `actor` after every commit that deletes the object or writes
    /// one of its properties (per `keyPaths`, as in `observe(keyPaths:on:_:)`); the object in
    /// the change is read through the actor's actor-isolated Realm and may be used only on the
    /// actor. No initial call. Returns once the observer is registered on the actor (an empty
    /// token when the object was deleted before that).
    public func observe<A: Actor, T: Object>(
        keyPaths: [String]? = nil, on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, ObjectChange<T>) -> Void
    ) async -> NotificationToken {
        guard realm != nil else {
            preconditionFailure("Only objects which are managed by a Realm support change notifications")
        }
        if isInvalidated { preconditionFailure("Object has been deleted or invalidated.") }
        return await ActorObservation.register(self as Object, on: actor, isolation: _isolation) { o in
            o.observe(keyPaths: keyPaths, on: nil) { (change: ObjectChange<T>) in ActorObservation.call(actor, change, block) }
        }
    }

    /// The actor form with Swift key paths (`\Dog.name`).
    public func observe<A: Actor, T: Object>(
        keyPaths: [PartialKeyPath<T>], on actor: A, _isolation: isolated (any Actor)? = #isolation,
        _ block: @Sendable @escaping (isolated A, ObjectChange<T>) -> Void
    ) async -> NotificationToken {
        await observe(keyPaths: Observation.names(keyPaths), on: actor, _isolation: _isolation, block)
    }
}
