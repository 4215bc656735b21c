COUNT { (e)<-[:{{type}}]-() }
