// Put a fact with an entity object into the KG, marked with the correction that added it.
MERGE (s:Entity {id: $s})
MERGE (o:Entity {id: $o})
MERGE (s)-[r:$($r)]->(o)
SET r.tog_correction = $correction
