// Draws the last runs in Neo4j Browser, each as its tree: set the parameter
// first with  :param last => 10  then run this query.
MATCH (r:TogRun)
WITH r ORDER BY r.started DESC LIMIT $last
MATCH (r)-[root:ROOT]->(top:TogPath)
MATCH tree = (top)<-[:PARENT*0..]-(p:TogPath)
OPTIONAL MATCH foreseen = (p)<-[:LOOKAHEAD]-(:TogSimulated)
RETURN r, root, tree, foreseen
