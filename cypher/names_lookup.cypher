// Entities whose normalised name equals each key, with their names: at most
// $most a key (a name thousands share is read no further: DISTINCT and LIMIT
// stop the index scan), so linking costs one round trip.
UNWIND $keys AS key
CALL (key) {
  MATCH (n:TogName {key: key})
  WITH DISTINCT n.entity AS id
  LIMIT $most
  OPTIONAL MATCH (e:Entity {id: id})
  RETURN collect([id, e.name]) AS entities
}
RETURN key, entities
