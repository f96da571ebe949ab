from modlens.cli import main

raise SystemExit(main())
