// What says whether the entity has this name: a name a load wrote is no edge
// on Neo4j, but the entity's shown name (or the one a correction's displaced),
// or one of the linking keys a load made (matched by the key, as linking
// matches it, whatever the name predicate); a name a correction put in is an
// edge to its Value. Keys are looked up by entity, never by key
// (load_name_keys.cypher says why).
MATCH (s:Entity {id: $s})
OPTIONAL MATCH (v:Value {id: $o})
OPTIONAL MATCH (n:TogName {entity: $s}) USING INDEX n:TogName(entity)
WHERE n.key = $key AND NOT n.source STARTS WITH 'correction:'
WITH s, v, count(n) AS loaded
RETURN s.name AS shown, s.tog_name_before AS before, loaded > 0 AS loaded,
       v IS NOT NULL AND EXISTS { (s)-[:{{type}}]->(v) } AS edge
