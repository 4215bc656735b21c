COUNT { (e)-->() } AS out,
     COUNT { (e)<--() } - COUNT { (e)<-[:AT]-() } - COUNT { (e)<-[:ABOUT]-() } AS in
