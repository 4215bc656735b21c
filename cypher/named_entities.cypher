// Entities that have a name, from a seeded place among them on ($skip):
// where `tog warm` starts its questions. A scan of the linking index that
// stops after $skip + $most named entities: it reads names only, never the
// Entity label (which, in a KG of few names and many unnamed nodes, was
// read to its end to go past $skip: 50,000 unnamed nodes for 50 names).
MATCH (n:TogName)
WHERE n.entity IS NOT NULL
WITH DISTINCT n.entity AS id
RETURN id
SKIP $skip
LIMIT $most
