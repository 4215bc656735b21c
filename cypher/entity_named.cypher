// A correction makes an entity: the node, its name and its linking key
// (tagged with the correction, so a revert finds exactly these).
MERGE (e:Entity {id: $id})
  ON CREATE SET e.sk = $sk
SET e.name = coalesce(e.name, $name)
MERGE (n:TogName {key: $key, entity: $id})
  ON CREATE SET n.source = $source
