from clusterstack.cli import main


def test_validate_examples(repo_root, capsys):
    n = len(list((repo_root / "clusters").glob("*.yaml")))
    assert main(["--root", str(repo_root), "validate"]) == 0
    assert f"{n} cluster config(s)" in capsys.readouterr().out


def test_typer_exit_code_propagates(monkeypatch):
    import typer

    from clusterstack.cli import app

    @app.command("zz-exit-probe", hidden=True)
    def _probe() -> None:
        raise typer.Exit(4)

    try:
        assert main(["zz-exit-probe"]) == 4
    finally:
        app.registered_commands[:] = [c for c in app.registered_commands if c.name != "zz-exit-probe"]
