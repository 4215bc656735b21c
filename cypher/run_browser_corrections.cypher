// The corrections that touched the entities a run visited (with :param run set).
MATCH (:TogRun {id: $run})-[:ROOT]->(:TogPath)<-[:PARENT*0..]-(:TogPath)-[:AT]->(e:Entity)
WITH DISTINCT e
MATCH (c:TogCorrection)-[about:ABOUT]->(e)
RETURN c, about, e
