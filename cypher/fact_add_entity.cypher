// Put a fact with an entity object into the KG, marked with the correction that added it
// (the type named in the text, as in fact_exists: MERGE looks for the edge first).
MERGE (s:Entity {id: $s})
  ON CREATE SET s.sk = $s_sk
MERGE (o:Entity {id: $o})
  ON CREATE SET o.sk = $o_sk
MERGE (s)-[r:{{type}}]->(o)
SET r.tog_correction = $correction
