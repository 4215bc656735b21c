// Draws one run in Neo4j Browser: set the parameter first with
//   :param run => "RUN-ID"
// then run this query.  Style it with cypher/tog-browser.grass (:style).
MATCH (r:TogRun {id: $run})-[root:ROOT]->(top:TogPath)
MATCH tree = (top)<-[:PARENT*0..]-(p:TogPath)
OPTIONAL MATCH at = (p)-[:AT]->()
RETURN r, root, tree, at
