// Put a fact with an entity object into the KG, marked with the correction that added it.
MERGE (s:Entity {id: $s})
  ON CREATE SET s.sk = $s_sk
MERGE (o:Entity {id: $o})
  ON CREATE SET o.sk = $o_sk
MERGE (s)-[r:$($r)]->(o)
SET r.tog_correction = $correction
