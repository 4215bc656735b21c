// Entities that have a name, from a seeded place among them on ($skip):
// where `tog warm` starts its questions. A scan of the Entity label that
// stops after $skip + $most named nodes (in a KG with fewer, it reads the
// label to its end: once a warm-up, never for a question).
MATCH (e:Entity)
WHERE e.name IS NOT NULL
RETURN e.id AS id
SKIP $skip
LIMIT $most
