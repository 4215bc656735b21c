// Entities that have a name, from a seeded place among them on ($skip):
// where `tog warm` starts its questions. A bounded read: a scan of the
// Entity label that stops after $skip + $most named nodes.
MATCH (e:Entity)
WHERE e.name IS NOT NULL
RETURN e.id AS id
SKIP $skip
LIMIT $most
