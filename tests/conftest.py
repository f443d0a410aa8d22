pytest_plugins = ["tests.typesense_fixture"]
