// A reverted correction takes out the entity it made: its linking key, then
// the node itself (and the correction records' ABOUT links to it) unless a KG
// fact still touches it (then its name stays).
OPTIONAL MATCH (n:TogName {key: $key, entity: $id}) WHERE n.source = $source
DELETE n
WITH count(*) AS dropped
MATCH (e:Entity {id: $id})
WHERE NOT EXISTS { (e)--(:Entity) } AND NOT EXISTS { (e)-->(:Value) }
DETACH DELETE e
