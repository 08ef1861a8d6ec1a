int not_a_plugin_answer(void);
