"""Run rows: started, claimed, updated and queued again; forks, children, Django task results."""
