module spool-k8s-pause

go 1.24
