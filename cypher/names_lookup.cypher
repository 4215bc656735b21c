// Entities whose normalised name equals each key.
UNWIND $keys AS key
MATCH (n:TogName {key: key})
RETURN key, collect(DISTINCT n.entity) AS entities
