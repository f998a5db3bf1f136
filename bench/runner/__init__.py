"""The experiment runner: dataset → replay → strategy → cache sims → answer → judge → store, resumable."""
